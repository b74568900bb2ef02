package traffic

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// ks is the Kolmogorov-Smirnov distance between the samples and d's CDF.
func ks(samples []int64, d SizeDist) float64 {
	x := make([]float64, len(samples))
	for i, s := range samples {
		x[i] = float64(s)
	}
	sort.Float64s(x)
	n := float64(len(x))
	var D float64
	for i, v := range x {
		F := d.CDF(v)
		D = math.Max(D, math.Max(math.Abs(float64(i+1)/n-F), math.Abs(F-float64(i)/n)))
	}
	return D
}

// With 10^5 samples the KS distance exceeds 0.0062 with probability 0.001 for a correct sampler; 0.01
// leaves room for rounding sizes to whole bytes and still fails a sampler that is a few percent off.
const ksBound = 0.01

func TestSizeDistributionsMatchTheirCDFs(t *testing.T) {
	dists := map[string]SizeDist{"pareto": Pareto{Shape: 1.05, Nominal: 100e3, Cap: 1e9}}
	for _, name := range BuiltinCDFs() {
		c, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		dists[name] = c
	}
	for i, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range dists {
			if !yield(k) {
				return
			}
		}
	}) {
		d := dists[name]
		r := Rand(7, i)
		s := make([]int64, 100_000)
		for k := range s {
			s[k] = d.Sample(r)
		}
		if D := ks(s, d); D > ksBound {
			t.Errorf("%s: KS distance %.4f over 1e5 samples, want <= %v", name, D, ksBound)
		}
	}
	// A sampler drawing from the wrong distribution must fail the same bound.
	ws, _ := Builtin("websearch")
	hd, _ := Builtin("hadoop")
	r := Rand(7, 99)
	s := make([]int64, 100_000)
	for k := range s {
		s[k] = hd.Sample(r)
	}
	if D := ks(s, ws); D <= ksBound {
		t.Errorf("hadoop samples pass as websearch (KS %.4f)", D)
	}
}

func TestMeans(t *testing.T) {
	for name, want := range map[string]float64{"websearch": 1.7111e6, "hadoop": 121.0e3, "storage": 41.0e3} {
		c, _ := Builtin(name)
		if m := c.Mean(); math.Abs(m-want)/want > 0.02 {
			t.Errorf("%s mean %.4g, want ~%.4g (linear interpolation between the CDF points)", name, m, want)
		}
	}
	// The capped Pareto's true mean is ~48.6 KB (expander thesis §4.3.1), not its nominal 100 KB.
	p := Pareto{Shape: 1.05, Nominal: 100e3, Cap: 1 << 30}
	if m := p.Mean(); math.Abs(m-48577) > 100 {
		t.Errorf("pareto capped mean %.0f, want ~48577", m)
	}
}

func TestParseCDF(t *testing.T) {
	c, err := ParseCDF("x", strings.NewReader("# comment\n0 0\n1000 50\n\n3000 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Mean(); m != 0.5*500+0.5*2000 {
		t.Errorf("mean %v", m)
	}
	if q := c.Quantile(0.75); q != 2000 {
		t.Errorf("quantile(0.75) = %v, want 2000", q)
	}
	frac, err := ParseCDF("f", strings.NewReader("0 0\n10 1\n"))
	if err != nil || frac.Cum[1] != 1 {
		t.Errorf("fractions file: %v %v", frac, err)
	}
	for _, bad := range []string{"", "0 0\n", "0 0\n10 90\n", "0 0\n10 50\n5 100\n", "0 0\nten 100\n", "0 0 0\n1 100\n"} {
		if _, err := ParseCDF("bad", strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPoissonOfferedLoad(t *testing.T) {
	ws, _ := Builtin("websearch")
	hosts := make([]int, 16)
	for i := range hosts {
		hosts[i] = i
	}
	const rate, load = 100e9, 0.5
	dur := 1700 * clock.Millisecond // ~1e5 flows
	s, err := Poisson(Rand(1, 0), Arrivals{Sizes: ws, RateBps: rate, Load: load, Duration: dur, Matrix: Uniform(hosts), Class: "poisson"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) < 90_000 {
		t.Fatalf("%d flows, want ~1e5", len(s))
	}
	if got := OfferedLoad(s, 16, rate, 0, dur); math.Abs(got-load)/load > 0.02 {
		t.Errorf("offered load %.4f, want %.2f within 2%%", got, load)
	}
	sizes := make([]int64, len(s))
	for i, f := range s {
		sizes[i] = f.Size
		if f.Src == f.Dst || f.At < 0 || f.At >= dur {
			t.Fatalf("bad flow %+v", f)
		}
	}
	if D := ks(sizes, ws); D > ksBound {
		t.Errorf("Poisson sizes: KS %.4f", D)
	}
	// Per-source rate: every host offers about the same.
	per := map[int]float64{}
	for _, f := range s {
		per[f.Src] += float64(f.Size)
	}
	for h, b := range per {
		if l := b * 8 / (rate * dur.Seconds()); math.Abs(l-load) > 0.1 {
			t.Errorf("h%d offers %.3f", h, l)
		}
	}
	again, _ := Poisson(Rand(1, 0), Arrivals{Sizes: ws, RateBps: rate, Load: load, Duration: dur, Matrix: Uniform(hosts)})
	if len(again) != len(s) || again[len(s)/2].Size != s[len(s)/2].Size || again[len(s)/2].At != s[len(s)/2].At {
		t.Error("same seed, different schedule")
	}
	if _, err := Poisson(Rand(1, 0), Arrivals{Sizes: ws, RateBps: rate, Load: 1.5, Duration: dur, Matrix: Uniform(hosts)}); err == nil {
		t.Error("load 1.5 accepted")
	}
}

func TestPoissonIncastLoad(t *testing.T) {
	hosts := make([]int, 64)
	for i := range hosts {
		hosts[i] = i
	}
	const rate, load = 100e9, 0.02
	dur := clock.Time(20) * clock.Second // ~1e4 events of 60 x 500 KB
	s, err := PoissonIncast(Rand(1, 1), IncastArrivals{Hosts: hosts, Senders: 60, Size: 500e3, RateBps: rate, Load: load, Duration: dur})
	if err != nil {
		t.Fatal(err)
	}
	if got := OfferedLoad(s, 64, rate, 0, dur); math.Abs(got-load)/load > 0.02 {
		t.Errorf("incast offered load %.5f, want %.3f within 2%%", got, load)
	}
	// Shape: flows come in groups of 60 with one time and one receiver, senders distinct.
	if len(s)%60 != 0 {
		t.Fatalf("%d flows is not a multiple of 60", len(s))
	}
	for i := 0; i < len(s); i += 60 {
		seen := map[int]bool{}
		for _, f := range s[i : i+60] {
			if f.At != s[i].At || f.Dst != s[i].Dst || f.Src == f.Dst || seen[f.Src] {
				t.Fatalf("event at %d is not a 60->1 incast: %+v", i, f)
			}
			seen[f.Src] = true
		}
	}
}

func TestPatterns(t *testing.T) {
	hosts := make([]int, 16)
	for i := range hosts {
		hosts[i] = i
	}
	r := Rand(3, 0)
	p := Permutation(r, hosts)
	in := map[int]int{}
	for i, s := range p.Src {
		if len(p.Dst[i]) != 1 || p.Dst[i][0] == s {
			t.Fatalf("permutation row %d: %d -> %v", i, s, p.Dst[i])
		}
		in[p.Dst[i][0]]++
	}
	if len(p.Src) != 16 || len(in) != 16 {
		t.Errorf("permutation: %d senders, %d receivers", len(p.Src), len(in))
	}
	half, err := Choose(r, hosts, 0.5)
	if err != nil || len(half) != 8 {
		t.Fatalf("choose 0.5: %v %v", half, err)
	}
	a2a, err := Once(r, Uniform(half), 1000, 5, false, "a2a")
	if err != nil || len(a2a) != 8*7 {
		t.Fatalf("all-to-all among 8: %d flows, %v", len(a2a), err)
	}
	if _, err := Choose(r, hosts, 0.1); err == nil {
		t.Error("fraction leaving one host accepted")
	}
	group := func(h int) int { return h / 4 }
	g := Groups(hosts, group)
	adv1, _ := Adv1(g)
	for i, s := range adv1.Src {
		for _, d := range adv1.Dst[i] {
			if group(d) != (group(s)+1)%4 {
				t.Fatalf("adv1: h%d (group %d) -> h%d (group %d)", s, group(s), d, group(d))
			}
		}
	}
	adv2, target, _ := Adv2(r, g)
	if len(adv2.Src) != 12 {
		t.Errorf("adv2: %d senders, want the 12 hosts outside the target group", len(adv2.Src))
	}
	for i, s := range adv2.Src {
		if group(s) == target {
			t.Fatalf("adv2: target-group host h%d sends", s)
		}
		for _, d := range adv2.Dst[i] {
			if group(d) != target {
				t.Fatalf("adv2: h%d -> h%d outside target group %d", s, d, target)
			}
		}
	}
	if _, err := Adv1(Groups(hosts, func(int) int { return 0 })); err == nil {
		t.Error("adv1 on one group accepted")
	}
}

func TestParamServerShape(t *testing.T) {
	s, err := ParamServer(PS{Server: 0, Workers: []int{1, 2, 3}, Push: 8e6, Broadcast: 4e6, Rounds: 2, Class: "ps"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 12 {
		t.Fatalf("%d flows, want 2 rounds x (3 pushes + 3 broadcasts)", len(s))
	}
	byID := map[uint32]Flow{}
	for _, f := range s {
		byID[f.ID] = f
	}
	for _, f := range s {
		switch f.Class {
		case "ps-push":
			if f.Dst != 0 || f.Size != 8e6 {
				t.Errorf("push %+v", f)
			}
			for _, a := range f.After { // a later round's push waits for its own worker's broadcast
				if b := byID[a]; b.Class != "ps-bcast" || b.Dst != f.Src {
					t.Errorf("push %d waits for %+v", f.ID, b)
				}
			}
		case "ps-bcast":
			if f.Src != 0 || f.Size != 4e6 || len(f.After) != 3 {
				t.Errorf("broadcast %+v", f)
			}
			for _, a := range f.After {
				if byID[a].Class != "ps-push" {
					t.Errorf("broadcast %d waits for %+v", f.ID, byID[a])
				}
			}
		default:
			t.Errorf("class %q", f.Class)
		}
	}
	if _, err := ParamServer(PS{Server: 1, Workers: []int{1, 2}, Push: 1, Broadcast: 1, Rounds: 1}); err == nil {
		t.Error("server among workers accepted")
	}
}

func TestMoEShape(t *testing.T) {
	hosts := make([]int, 16)
	for i := range hosts {
		hosts[i] = i
	}
	m := MoE{Hosts: hosts, Experts: 16, TopK: 2, Tokens: 4096, TokenSize: 1000, Zipf: 1.2, Layers: 2, Class: "moe"}
	s, err := MixtureOfExperts(Rand(1, 0), m)
	if err != nil {
		t.Fatal(err)
	}
	var disp, comb int64
	recv := map[int]int64{}
	dispIDs := map[uint32]bool{}
	for _, f := range s {
		switch f.Class {
		case "moe-dispatch":
			disp += f.Size
			recv[f.Dst] += f.Size
			dispIDs[f.ID] = true
		case "moe-combine":
			comb += f.Size
			for _, a := range f.After {
				if !dispIDs[a] {
					t.Fatalf("combine %d waits for %d, not an earlier dispatch", f.ID, a)
				}
			}
		}
	}
	// Each token visits 2 experts per layer; only those on its own host (1/16 of the time with 16
	// hosts, more under skew for tokens on h0) stay local.
	total := int64(2 * 4096 * 2 * 1000)
	if disp != comb || disp > total || disp < total*3/4 {
		t.Errorf("dispatch %d, combine %d bytes; want equal and close to %d", disp, comb, total)
	}
	// Zipf 1.2: expert 0 (on h0) is far more popular than expert 15 (on h15).
	if recv[0] < 4*recv[15] {
		t.Errorf("zipf skew missing: h0 receives %d, h15 %d", recv[0], recv[15])
	}
	m.Zipf = 0
	u, _ := MixtureOfExperts(Rand(1, 0), m)
	recv = map[int]int64{}
	for _, f := range u {
		if f.Class == "moe-dispatch" {
			recv[f.Dst] += f.Size
		}
	}
	if float64(recv[0]) > 1.3*float64(recv[15]) || float64(recv[15]) > 1.3*float64(recv[0]) {
		t.Errorf("uniform experts uneven: h0 %d, h15 %d", recv[0], recv[15])
	}
	m.TopK = 17
	if _, err := MixtureOfExperts(Rand(1, 0), m); err == nil {
		t.Error("top_k > experts accepted")
	}
}

func TestSortKeepsDependencies(t *testing.T) {
	ps, _ := ParamServer(PS{Server: 0, Workers: []int{1, 2}, Push: 10, Broadcast: 10, Rounds: 1, At: 50})
	var all Schedule
	all = all.Append(Schedule{{Src: 3, Dst: 4, Size: 1, At: 100, ID: 1}, {Src: 4, Dst: 3, Size: 1, At: 0, ID: 2}})
	all = all.Append(ps)
	all.Sort()
	byID := map[uint32]Flow{}
	for _, f := range all {
		byID[f.ID] = f
	}
	for _, f := range all {
		if f.Class == "-bcast" {
			for _, a := range f.After {
				if byID[a].Class != "-push" {
					t.Fatalf("after sorting, broadcast %d waits for %+v", f.ID, byID[a])
				}
			}
		}
	}
}

func TestTraceRoundTrips(t *testing.T) {
	ws, _ := Builtin("websearch")
	s, _ := Poisson(Rand(2, 0), Arrivals{Sizes: ws, RateBps: 100e9, Load: 0.3, Duration: clock.Millisecond, Matrix: Uniform([]int{0, 1, 2, 3})})
	var b bytes.Buffer
	if err := WriteHPCC(&b, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHPCC("flow.txt", &b, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(s) {
		t.Fatalf("%d flows back, wrote %d", len(back), len(s))
	}
	for i := range s {
		if back[i].Src != s[i].Src || back[i].Dst != s[i].Dst || back[i].Size != s[i].Size || (back[i].At-s[i].At) > clock.Nanosecond || (s[i].At-back[i].At) > clock.Nanosecond {
			t.Fatalf("flow %d: %+v back as %+v", i, s[i], back[i])
		}
	}
	for _, bad := range []string{"2\n0 1 3 100 10 0\n", "1\n0 9 3 100 10 0\n", "1\n0 0 3 100 10 0\n", "1\n0 1 3 100 -1 0\n", "x\n"} {
		if _, err := ReadHPCC("bad", strings.NewReader(bad), 4); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}

	ps, _ := ParamServer(PS{Server: 0, Workers: []int{1, 2, 3}, Push: 100, Broadcast: 50, Rounds: 2})
	b.Reset()
	if err := WriteHTSim(&b, ps, 4); err != nil {
		t.Fatal(err)
	}
	cm, err := ReadHTSim("ps.cm", strings.NewReader(b.String()), 4)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for i := range ps {
		a, c := ps[i], cm[i]
		sort.Slice(c.After, func(x, y int) bool { return c.After[x] < c.After[y] })
		if a.ID != c.ID || a.Src != c.Src || a.Dst != c.Dst || a.Size != c.Size || !slices.Equal(a.After, c.After) {
			t.Fatalf("flow %d: %+v back as %+v\n%s", i, a, c, b.String())
		}
	}
	gen := "Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 4096 send_done_trigger 1\n1->2 id 2 trigger 1 size 4096\ntrigger id 1 oneshot\n"
	cm, err = ReadHTSim("gen.cm", strings.NewReader(gen), 4)
	if err != nil || len(cm) != 2 || !slices.Equal(cm[1].After, []uint32{1}) {
		t.Fatalf("htsim generator output: %+v %v", cm, err)
	}
	for _, bad := range []string{"0->1 id 1 start 0 size 0\n", "0->1 id 1 trigger 5 size 10\n", "0->7 id 1 start 0 size 10\n", "0->1 id 1 start 0 size 10 colour red\n"} {
		if _, err := ReadHTSim("bad", strings.NewReader(bad), 4); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDragonflyPairsAndConnections(t *testing.T) {
	groups := [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}
	group := func(h int) int { return h / 2 }
	r := Rand(3, 0)
	m, gp, err := Adv1Pair(r, groups)
	if err != nil || gp[0] == gp[1] || len(m.Src) != 2 {
		t.Fatalf("adv1 pair %v %+v %v", gp, m, err)
	}
	s, err := Connections(r, m, 50, 1000, 0, "adv1")
	if err != nil || len(s) != 50 {
		t.Fatal(err, len(s))
	}
	for _, f := range s {
		if group(f.Src) != gp[0] || group(f.Dst) != gp[1] {
			t.Fatalf("adv1 random pair %v: flow h%d -> h%d", gp, f.Src, f.Dst)
		}
	}
	u, _ := Unf(groups)
	s, _ = Connections(r, u, 200, 1000, 0, "unf")
	seen := map[int]bool{}
	for _, f := range s {
		if group(f.Src) == group(f.Dst) {
			t.Fatalf("unf flow inside a group: h%d -> h%d", f.Src, f.Dst)
		}
		seen[f.Dst] = true
	}
	if len(seen) != 8 {
		t.Fatalf("unf reached %d of 8 destinations in 200 draws", len(seen))
	}
	if _, err := Connections(r, u, 0, 1000, 0, ""); err == nil {
		t.Fatal("0 connections accepted")
	}
}

// The ProjecToR-style matrix is skewed (a few rack pairs carry most of the mass) and never pairs a rack
// with itself; zipf 0 is uniform over rack pairs. Arrivals follow it.
func TestSkewedMatrix(t *testing.T) {
	var racks [][]int
	for i := 0; i < 32; i++ {
		racks = append(racks, []int{2 * i, 2*i + 1})
	}
	r := Rand(1, 0)
	pairs, p, err := Skewed(r, racks, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	sorted := append([]float64(nil), p...)
	sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
	top, n80 := 0.0, 0
	for i, x := range sorted {
		top += x
		if top >= 0.8 && n80 == 0 {
			n80 = i + 1
		}
	}
	// 4 host pairs per rack pair: the hottest rack pair holds 4 x sorted[0].
	t.Logf("zipf 1.5 over 32 racks: hottest rack pair %.1f%%, 80%% of the mass in %d of %d host pairs (%.1f%%)",
		400*sorted[0], n80, len(p), 100*float64(n80)/float64(len(p)))
	if 4*sorted[0] < 0.1 || float64(n80)/float64(len(p)) > 0.1 {
		t.Errorf("not skewed: top rack pair %.3f, 80%% in %d of %d", 4*sorted[0], n80, len(p))
	}
	for _, pr := range pairs {
		if pr[0]/2 == pr[1]/2 {
			t.Fatalf("pair inside a rack: %v", pr)
		}
	}
	_, u, _ := Skewed(r, racks, 0)
	for _, x := range u {
		if math.Abs(x-u[0]) > 1e-12 {
			t.Fatal("zipf 0 is not uniform")
		}
	}
	s, err := PairPoisson(r, pairs, p, 1e6, mustWebSearch(t), 0, clock.Millisecond, "pj")
	if err != nil || len(s) < 900 || len(s) > 1100 {
		t.Fatalf("1e6 flows/s for 1 ms gave %d flows (%v)", len(s), err)
	}
}

func mustWebSearch(t *testing.T) SizeDist {
	t.Helper()
	c, err := Builtin("websearch")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// htsim's current parser (connection_matrix.cpp at 841d9e7): starts in picoseconds read as a C float,
// "barrier count N" triggers, prio, and its refusals; the older microsecond form behind htsim-us.
func TestHTSimSyntax(t *testing.T) {
	s := Schedule{{ID: 1, Src: 0, Dst: 1, Size: 100, At: 3 * clock.Microsecond}, {ID: 2, Src: 1, Dst: 2, Size: 100},
		{ID: 3, Src: 2, Dst: 3, Size: 100, After: []uint32{1, 2}}}
	var b bytes.Buffer
	if err := WriteHTSim(&b, s, 4); err != nil {
		t.Fatal(err)
	}
	want := "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 3000000 size 100 send_done_trigger 1\n" +
		"1->2 id 2 start 0 size 100 send_done_trigger 1\n2->3 id 3 trigger 1 size 100\ntrigger id 1 barrier count 2\n"
	if b.String() != want {
		t.Fatalf("matrix:\n%s\nwant:\n%s", b.String(), want)
	}
	back, err := ReadHTSim("m", strings.NewReader(b.String()), 4)
	if err != nil || back[0].At != 3*clock.Microsecond || !slices.Equal(back[2].After, []uint32{1, 2}) {
		t.Fatalf("read back %+v %v", back, err)
	}
	// The same file read as the old microsecond form starts a million times later.
	old, err := ReadHTSimUnit("m", strings.NewReader(b.String()), 4, HTSimMicroseconds)
	if err != nil || old[0].At != 3*clock.Second {
		t.Fatalf("microsecond reading %+v %v", old, err)
	}
	b.Reset()
	if err := WriteHTSimUnit(&b, s[:1], 4, HTSimMicroseconds); err != nil || !strings.Contains(b.String(), "start 3 size") {
		t.Fatalf("microsecond writer %q %v", b.String(), err)
	}
	// stof: 1 ms + 1 ps is not a float32; htsim (and we) read the nearest, 1 ms.
	g, err := ReadHTSim("f", strings.NewReader("0->1 id 1 start 1000000001 size 10 prio 3\n"), 4)
	if err != nil || g[0].At != clock.Millisecond {
		t.Fatalf("float start %+v %v", g, err)
	}
	for _, bad := range []string{
		"0->1 id 1 start 0 trigger 1 size 10\ntrigger id 1 oneshot\n", // both
		"0->1 id 1 size 10\n", // neither
		"0->1 id 1 start 0 size 10 send_done_trigger 1\n1->2 id 2 trigger 1 size 10\ntrigger id 1 barrier count 2\n", // never fires
		"0->1 id 1 start 0 size 10 send_done_trigger 1\n1->2 id 2 trigger 1 size 10\n",                               // undefined
		"0->1 id 1 start 0 size 10 send_done_trigger 1\n1->2 id 2 trigger 1 size 10\ntrigger id 1 barrier 2\n",       // old writer's syntax
		"0->1 id 1 start 0 size 10 addon\n",
		"failure switch_type TOR switch_id 0\n",
		"trigger id 1\n",
	} {
		if _, err := ReadHTSim("bad", strings.NewReader(bad), 4); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
