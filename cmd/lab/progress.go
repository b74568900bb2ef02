package main

import (
	"fmt"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
)

// runProgress draws lab run's progress on stderr: engine time against the lab's end and flows completed
// (the bar follows whichever is further along; the ETA is progressbar's estimate from that rate). Nil when stderr is not a
// terminal or -q was given, so logs and CI output stay clean.
type runProgress struct {
	bar *progressbar.ProgressBar
	end clock.Time
}

func newRunProgress(quiet bool, end clock.Time) *runProgress {
	if quiet || end <= 0 || !isTerminal(os.Stderr) {
		return nil
	}
	const steps = 1000 // the bar counts thousandths of the run's end
	bar := progressbar.NewOptions64(steps,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription("engine time"),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200_000_000), // 200 ms
		progressbar.OptionClearOnFinish(),
	)
	return &runProgress{bar: bar, end: end}
}

// update is the virtual backend's Progress hook (and any backend's that can report engine time).
func (p *runProgress) update(now clock.Time, completed, total int) {
	if p == nil {
		return
	}
	// A run that stops when its flows are done ends well before its duration: the larger of the two
	// fractions is the better guess at how far along it is.
	frac := float64(now) / float64(p.end)
	if total > 0 {
		frac = max(frac, float64(completed)/float64(total))
	}
	// Set before Describe: Describe renders, and the throttle would skip a render right after it.
	p.bar.Set64(min(int64(frac*1000), 1000))
	p.bar.Describe(fmt.Sprintf("%v / %v, %d/%d flows", now, p.end, completed, total))
}

func (p *runProgress) finish() {
	if p == nil {
		return
	}
	p.bar.Finish()
	fmt.Fprintln(os.Stderr)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
