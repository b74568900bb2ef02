// Package traffic turns workload descriptions into a flow schedule: who sends how many bytes to whom,
// and when. Generators are seeded and pure; they know host indices, never devices or routes.
package traffic

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
)

// Flow is one scheduled transfer.
type Flow struct {
	ID    uint32
	Src   int // host index
	Dst   int // host index
	Size  int64
	At    clock.Time
	Class string // the workload entry that produced it: "flows", "incast", "poisson", ...
	// Pins: Via lists relay hosts in order; Path lists every device (graph node names resolved by the
	// lab). At most one is set.
	Via  []string
	Path []string
	// After lists the IDs of flows that must complete before this one starts; it then starts at At or
	// when the last of them completes, whichever is later. Generators number their flows from 1 and
	// refer to those numbers; Append and Sort keep the references pointing at the same flows. Backends
	// must honour it (harness/virtual does; a backend that cannot must refuse such a schedule).
	After []uint32
}

// Schedule is a run's flows, sorted by start time then ID.
type Schedule []Flow

// Sort orders the schedule by start time and renumbers IDs from 1 in that order, so that IDs are
// stable for a given set of workloads regardless of how generators interleaved. After references are
// renumbered with their flows; they need the IDs to be unique beforehand (Append makes them so).
func (s Schedule) Sort() {
	sort.SliceStable(s, func(i, j int) bool { return s[i].At < s[j].At })
	renum := map[uint32]uint32{}
	for i := range s {
		if s[i].ID != 0 {
			renum[s[i].ID] = uint32(i + 1)
		}
	}
	for i := range s {
		s[i].ID = uint32(i + 1)
		if len(s[i].After) > 0 {
			after := make([]uint32, 0, len(s[i].After))
			for _, a := range s[i].After {
				if n, ok := renum[a]; ok {
					after = append(after, n)
				}
			}
			s[i].After = after
		}
	}
}

// Append adds more to s, giving the new flows IDs after the largest in s (a generator's own numbering,
// from 1, is shifted) and shifting their After references with them.
func (s Schedule) Append(more Schedule) Schedule {
	var base uint32
	for _, f := range s {
		base = max(base, f.ID)
	}
	for i, f := range more {
		id := f.ID
		if id == 0 {
			id = uint32(i + 1)
		}
		f.ID = base + id
		if len(f.After) > 0 {
			after := make([]uint32, len(f.After))
			for k, a := range f.After {
				after[k] = base + a
			}
			f.After = after
		}
		s = append(s, f)
	}
	return s
}

// number gives a generator's flows IDs 1..n in order.
func (s Schedule) number() Schedule {
	for i := range s {
		s[i].ID = uint32(i + 1)
	}
	return s
}

// Rand returns the generator's RNG for a seed and a workload index, so adding a workload does not
// change the flows another one draws.
func Rand(seed int64, workload int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(workload)*0x9E3779B97F4A7C15+1))
}

// Incast is a one-shot N->1: senders distinct hosts (other than receiver) each send size bytes at at.
// If from is non-empty the senders are its first n entries; otherwise they are drawn at random.
func Incast(r *rand.Rand, hosts, n, receiver int, from []int, size int64, at clock.Time) (Schedule, error) {
	if receiver < 0 || receiver >= hosts {
		return nil, fmt.Errorf("incast: receiver h%d is not one of the %d hosts", receiver, hosts)
	}
	if n < 1 || n > hosts-1 {
		return nil, fmt.Errorf("incast: senders must be 1..%d (hosts other than the receiver), got %d", hosts-1, n)
	}
	if size <= 0 {
		return nil, fmt.Errorf("incast: size must be positive, got %d", size)
	}
	var senders []int
	if len(from) > 0 {
		if len(from) < n {
			return nil, fmt.Errorf("incast: %d senders requested but only %d listed", n, len(from))
		}
		for _, s := range from[:n] {
			if s == receiver || s < 0 || s >= hosts {
				return nil, fmt.Errorf("incast: sender h%d is the receiver or not a host", s)
			}
		}
		senders = from[:n]
	} else {
		others := make([]int, 0, hosts-1)
		for h := 0; h < hosts; h++ {
			if h != receiver {
				others = append(others, h)
			}
		}
		r.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		senders = others[:n]
		sort.Ints(senders)
	}
	s := make(Schedule, 0, n)
	for _, src := range senders {
		s = append(s, Flow{Src: src, Dst: receiver, Size: size, At: at, Class: "incast"})
	}
	return s, nil
}
