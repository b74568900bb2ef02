package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// PS is a parameter-server job (PortFC paper §V-D): per round, every worker pushes Push bytes to the server
// (many-to-one), then the server sends Broadcast bytes to every worker (one-to-many). A round's
// broadcast depends on all of its pushes completing, and the next round's push of a worker on that
// worker's broadcast completing, through Flow.After; the first pushes start at At.
type PS struct {
	Server    int
	Workers   []int
	Push      int64
	Broadcast int64
	Rounds    int
	At        clock.Time
	Class     string
}

// ParamServer generates p's flows. Push flows are classed Class+"-push", broadcasts Class+"-bcast", so
// the report separates the two stages as the paper's Fig. 15 does.
func ParamServer(p PS) (Schedule, error) {
	switch {
	case len(p.Workers) == 0:
		return nil, fmt.Errorf("ps: no workers")
	case p.Push <= 0 || p.Broadcast <= 0:
		return nil, fmt.Errorf("ps: push and broadcast sizes must be positive (%d, %d)", p.Push, p.Broadcast)
	case p.Rounds < 1:
		return nil, fmt.Errorf("ps: rounds %d must be at least 1", p.Rounds)
	}
	for _, w := range p.Workers {
		if w == p.Server {
			return nil, fmt.Errorf("ps: the server h%d is also a worker", w)
		}
	}
	var s Schedule
	id := uint32(0)
	next := func(f Flow) uint32 {
		id++
		f.ID = id
		s = append(s, f)
		return id
	}
	prevBcast := map[int]uint32{} // worker -> its broadcast flow of the previous round
	for round := 0; round < p.Rounds; round++ {
		var pushes []uint32
		for _, w := range p.Workers {
			f := Flow{Src: w, Dst: p.Server, Size: p.Push, At: p.At, Class: p.Class + "-push"}
			if b, ok := prevBcast[w]; ok {
				f.After = []uint32{b}
			}
			pushes = append(pushes, next(f))
		}
		for _, w := range p.Workers {
			prevBcast[w] = next(Flow{Src: p.Server, Dst: w, Size: p.Broadcast, At: p.At, Class: p.Class + "-bcast",
				After: append([]uint32(nil), pushes...)})
		}
	}
	return s, nil
}

// MoE is expert-parallel all-to-all traffic (PortFC paper §V-E): Tokens tokens spread evenly over Hosts
// (token t on Hosts[t mod len]), Experts experts likewise (expert e on Hosts[e mod len]). Per layer
// every token goes to TopK distinct experts (dispatch, many-to-few) and comes back (combine,
// few-to-many). Expert popularity is Zipf: expert e is chosen with weight 1/(e+1)^Zipf among those not
// yet chosen for the token (Zipf 0 is uniform), or by Popularity when given. Tokens headed the same
// way are one flow of TokenSize x count bytes; tokens whose expert is on their own host make no flow.
// A layer's combine starts when all its dispatch flows have completed, the next layer's dispatch when
// all combine flows have (Flow.After): the barrier an MoE layer has.
type MoE struct {
	Hosts      []int
	Experts    int
	TopK       int
	Tokens     int
	TokenSize  int64
	Zipf       float64
	Popularity []float64 // optional per-expert weights; overrides Zipf
	Layers     int
	At         clock.Time
	Class      string
}

// MixtureOfExperts generates m's flows: dispatch classed Class+"-dispatch", combine Class+"-combine".
func MixtureOfExperts(r *rand.Rand, m MoE) (Schedule, error) {
	switch {
	case len(m.Hosts) < 2:
		return nil, fmt.Errorf("moe: needs at least 2 hosts, got %d", len(m.Hosts))
	case m.Experts < 1:
		return nil, fmt.Errorf("moe: experts %d must be at least 1", m.Experts)
	case m.TopK < 1 || m.TopK > m.Experts:
		return nil, fmt.Errorf("moe: top_k %d is not in 1..experts (%d)", m.TopK, m.Experts)
	case m.Tokens < 1:
		return nil, fmt.Errorf("moe: tokens %d must be at least 1", m.Tokens)
	case m.TokenSize <= 0:
		return nil, fmt.Errorf("moe: token_size %d must be positive", m.TokenSize)
	case m.Layers < 1:
		return nil, fmt.Errorf("moe: layers %d must be at least 1", m.Layers)
	case m.Zipf < 0 || math.IsNaN(m.Zipf):
		return nil, fmt.Errorf("moe: zipf %v is negative", m.Zipf)
	case m.Popularity != nil && len(m.Popularity) != m.Experts:
		return nil, fmt.Errorf("moe: %d popularity weights for %d experts", len(m.Popularity), m.Experts)
	case float64(m.Tokens)*float64(m.TopK)*float64(m.TokenSize) > float64(units.MaxBytes):
		// One host pair can gather every token of a layer: its flow size must not wrap.
		return nil, fmt.Errorf("moe: tokens x top_k x token_size = %g bytes is more than %d", float64(m.Tokens)*float64(m.TopK)*float64(m.TokenSize), units.MaxBytes)
	}
	w := m.Popularity
	if w == nil {
		w = make([]float64, m.Experts)
		for e := range w {
			w[e] = 1 / math.Pow(float64(e+1), m.Zipf)
		}
	}
	n := len(m.Hosts)
	var s Schedule
	id := uint32(0)
	var prev []uint32 // the previous layer's combine flows
	for layer := 0; layer < m.Layers; layer++ {
		bytes := map[[2]int]int64{} // (token host, expert host) -> tokens x size
		for t := 0; t < m.Tokens; t++ {
			left := append([]float64(nil), w...)
			for k := 0; k < m.TopK; k++ {
				e := weighted(r, left)
				left[e] = 0
				src, dst := m.Hosts[t%n], m.Hosts[e%n]
				if src != dst {
					bytes[[2]int{src, dst}] += m.TokenSize
				}
			}
		}
		pairs := make([][2]int, 0, len(bytes))
		for p := range bytes {
			pairs = append(pairs, p)
		}
		sort.Slice(pairs, func(i, j int) bool {
			if pairs[i][0] != pairs[j][0] {
				return pairs[i][0] < pairs[j][0]
			}
			return pairs[i][1] < pairs[j][1]
		})
		var dispatch []uint32
		for _, p := range pairs {
			id++
			s = append(s, Flow{ID: id, Src: p[0], Dst: p[1], Size: bytes[p], At: m.At, Class: m.Class + "-dispatch",
				After: append([]uint32(nil), prev...)})
			dispatch = append(dispatch, id)
		}
		prev = prev[:0:0]
		for _, p := range pairs {
			id++
			s = append(s, Flow{ID: id, Src: p[1], Dst: p[0], Size: bytes[p], At: m.At, Class: m.Class + "-combine",
				After: append([]uint32(nil), dispatch...)})
			prev = append(prev, id)
		}
	}
	return s, nil
}
