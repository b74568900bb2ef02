package virtual

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

// Summaries builds and runs every spec on a fabric of its own, up to jobs at once (<= 0 or more than
// the cores: the cores), and summarizes each run as lab run's summary.json would. It is how a suite runs
// a spec over several seeds (spec.ExpandData) in process: each fabric is single-threaded and
// deterministic, so running side by side changes no result. The first error stops nothing already
// running but is returned with the spec's name.
func Summaries(ctx context.Context, specs []*spec.Spec, jobs int) ([]*report.Summary, error) {
	if jobs <= 0 || jobs > runtime.NumCPU() {
		jobs = runtime.NumCPU()
	}
	out := make([]*report.Summary, len(specs))
	errs := make([]error, len(specs))
	next := make(chan int)
	var wg sync.WaitGroup
	for j := 0; j < min(jobs, len(specs)); j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = summarize(ctx, specs[i])
			}
		}()
	}
	for i := range specs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("%s (seed %d): %w", specs[i].Name, specs[i].Seed, err)
		}
	}
	return out, nil
}

func summarize(ctx context.Context, s *spec.Spec) (*report.Summary, error) {
	l, err := lab.Build(s)
	if err != nil {
		return nil, err
	}
	f, err := New(l)
	if err != nil {
		return nil, err
	}
	res := f.Run(ctx)
	if res.Cancelled {
		return nil, ctx.Err()
	}
	return report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock,
		MeasureFrom: s.MeasureFrom.Clock(), Scheduled: len(l.Flows)}), nil
}
