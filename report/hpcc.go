package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/traffic"
)

// HPCC compatibility. The formats and the arithmetic follow alibaba-edu/High-Precision-Congestion-Control
// at commit 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be (2021-03-11): fct.txt as simulation/scratch/third.cc
// writes it (qp_finish: "%08x %08x %u %u %lu %lu %lu %lu"), pfc.txt as its get_pfc writes it, and the
// slowdown table of analysis/fct_analysis.py.

// HPCC's flow classes, in the dport column of flow.txt and fct.txt (traffic.HPCCDPort).
const (
	HPCCDPortNormal = traffic.HPCCDPortNormal
	HPCCDPortIncast = traffic.HPCCDPortIncast
)

// HPCCDPort is the dport HPCC's files give a flow of workload class class (traffic.HPCCDPort).
func HPCCDPort(class string) int { return traffic.HPCCDPort(class) }

// FCTLine is one line of fct.txt. Size keeps the field's text, because fct_analysis.py prints it back
// unchanged and sorts the printed lines.
type FCTLine struct {
	SIP, DIP       uint32
	SPort, DPort   int
	Size           string
	StartNs, FCTNs int64
	StandaloneNs   int64
}

// ReadFCT parses fct.txt ("sip dip sport dport size start_ns fct_ns standalone_ns", addresses in hex).
func ReadFCT(r io.Reader) ([]FCTLine, error) {
	var out []FCTLine
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 8 {
			return nil, fmt.Errorf("fct.txt:%d: %d fields, want 8 (sip dip sport dport size start fct standalone)", n, len(f))
		}
		var l FCTLine
		var v [8]int64
		for i, s := range f {
			base := 10
			if i < 2 {
				base = 16
			}
			x, err := strconv.ParseInt(s, base, 64)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("fct.txt:%d: field %d %q is not a non-negative integer", n, i+1, s)
			}
			v[i] = x
		}
		l.SIP, l.DIP, l.SPort, l.DPort = uint32(v[0]), uint32(v[1]), int(v[2]), int(v[3])
		l.Size, l.StartNs, l.FCTNs, l.StandaloneNs = f[4], v[5], v[6], v[7]
		out = append(out, l)
	}
	return out, sc.Err()
}

// HPCCBinOptions are fct_analysis.py's arguments.
type HPCCBinOptions struct {
	Type        int   // -t: 0 normal (dport 100), 1 incast (dport 200), 2 all (the script's own -t 2 has an awk syntax error)
	TimeLimitNs int64 // -T: keep flows with start + fct below this; 0 means the script's default, 3e9
	Step        int   // -s: bin width in percent; 0 means 5
}

// HPCCBins is fct_analysis.py's table, computed exactly as the script does it:
//
//  1. awk keeps lines with the class's dport and start+fct < T, and prints "slow size" where slow is
//     fct/standalone, or 1 when that is below 1, formatted as awk prints numbers (integers as integers,
//     others with OFMT %.6g: the percentiles are of these 6-digit values);
//  2. `sort -n -k 2` orders by size; equal sizes by the whole printed line, byte by byte (sort's last
//     resort comparison in the C/C.UTF-8 locale; another locale's collation may order ties otherwise);
//  3. `output.split('\n')[:-2]` drops the last line, i.e. the largest flow (the last of its ties);
//  4. with n lines left, bin i (of 100/step) holds lines [i*n/100, (i+1)*step*n/100) (integer division);
//     its size is the last line's, its percentiles are sorted(slow)[int(len*p)] for p = 0.5, 0.95, 0.99.
//
// The script fails (IndexError) when a bin is empty, i.e. when fewer lines are left than it needs; then
// the bins that are not empty are returned with an error saying so. Bin.Count is the bin's line count,
// Bin.Avg its mean slowdown (the script's commented-out "avg fct").
func HPCCBins(lines []FCTLine, opt HPCCBinOptions) ([]Bin, error) {
	if opt.TimeLimitNs == 0 {
		opt.TimeLimitNs = 3000000000
	}
	if opt.Step <= 0 {
		opt.Step = 5
	}
	type rec struct {
		text string
		slow float64
		size float64
	}
	var rs []rec
	for _, l := range lines {
		switch {
		case opt.Type == 0 && l.DPort != HPCCDPortNormal, opt.Type == 1 && l.DPort != HPCCDPortIncast:
			continue
		}
		if !(float64(l.StartNs)+float64(l.FCTNs) < float64(opt.TimeLimitNs)) {
			continue
		}
		if l.StandaloneNs == 0 && l.FCTNs == 0 {
			return nil, fmt.Errorf("fct.txt: a flow of size %s has fct and standalone fct 0 (awk: 0/0)", l.Size)
		}
		slow := float64(l.FCTNs) / float64(l.StandaloneNs) // x/0 is +Inf, which mawk prints as "inf"
		s := "1"
		if !(slow < 1) {
			s = awkNumber(slow)
		}
		v, _ := strconv.ParseFloat(s, 64)
		size, _ := strconv.ParseFloat(l.Size, 64)
		rs = append(rs, rec{text: s + " " + l.Size, slow: v, size: size})
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].size != rs[j].size {
			return rs[i].size < rs[j].size
		}
		return rs[i].text < rs[j].text
	})
	if len(rs) > 0 {
		rs = rs[:len(rs)-1]
	}
	n := len(rs)
	var bins []Bin
	var empty []string
	for i := 0; i < 100; i += opt.Step {
		lo, hi := i*n/100, (i+opt.Step)*n/100
		if hi > n {
			hi = n
		}
		if lo >= hi {
			empty = append(empty, fmt.Sprintf("%.2f", float64(i)/100))
			continue
		}
		sd := make([]float64, 0, hi-lo)
		sum := 0.0
		for _, r := range rs[lo:hi] {
			sd = append(sd, r.slow)
			sum += r.slow
		}
		sort.Float64s(sd)
		size, _ := strconv.ParseInt(strings.Fields(rs[hi-1].text)[1], 10, 64)
		bins = append(bins, Bin{Pct: float64(i) / 100, MaxSize: size, Count: hi - lo, Avg: sum / float64(hi-lo),
			P50: hpccPctl(sd, 0.5), P95: hpccPctl(sd, 0.95), P99: hpccPctl(sd, 0.99)})
	}
	if len(empty) > 0 {
		return bins, fmt.Errorf("%d flows after fct_analysis.py's filter and its dropped last line leave bins %s empty (the script stops with IndexError there)",
			n, strings.Join(empty, ","))
	}
	return bins, nil
}

// hpccPctl is fct_analysis.py's get_pctl: a[int(len(a)*p)], the float product truncated.
func hpccPctl(a []float64, p float64) float64 { return a[int(float64(len(a))*p)] }

// awkNumber formats v as mawk and gawk print a number: an integral value as an integer, anything else
// with OFMT, "%.6g"; +Inf as mawk (Debian's awk) prints it, "inf".
func awkNumber(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<31 {
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprintf("%.6g", v)
}

// HPCCTypeName names fct_analysis.py's -t values.
func HPCCTypeName(t int) string {
	switch t {
	case 0:
		return "normal (dport 100)"
	case 1:
		return "incast (dport 200)"
	}
	return "all flows"
}

// binsFromFCT computes the slowdown table of an fct.txt body: the normal flows (-t 0), or the incast
// flows (-t 1) when there are no normal ones. It returns the type used.
func binsFromFCT(fct []byte) ([]Bin, int, error) {
	lines, err := ReadFCT(bytes.NewReader(fct))
	if err != nil {
		return nil, 0, err
	}
	return BinsOf(lines)
}

// BinsOf is the table lab report shows for a run: fct_analysis.py -t 0 (normal flows), or -t 1 when
// the run has no normal flows.
func BinsOf(lines []FCTLine) ([]Bin, int, error) {
	typ := 0
	normal := false
	for _, l := range lines {
		if l.DPort == HPCCDPortNormal {
			normal = true
			break
		}
	}
	if !normal {
		typ = 1
	}
	bins, err := HPCCBins(lines, HPCCBinOptions{Type: typ})
	return bins, typ, err
}
