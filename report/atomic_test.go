package report

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/fabriclab/fabriclab/records"
)

// TestPlotSurvivesSIGKILL: a process writing a plot over and over is SIGKILLed at several moments; the
// PNG on disk always decodes whole (plots written in place left a truncated PNG: issue 23, defect 9),
// a reader never sees part of one while it is written, and what the kill leaves besides is only a hidden temporary, which the next report's clearPlots removes.
func TestPlotSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv("FABRICLAB_PLOT_KILL_DIR"); dir != "" {
		// Cheap to draw (about 40 ms a write, most of it encoding the PNG into the temporary), so a
		// kill lands mid-write. A 2000-point zigzag took about 4.5 s of CPU to rasterize per write:
		// kills landed between writes, and on a loaded machine the first write took longer than the 20 s
		// the test gave it ("no such file": the flake).
		p := plot.New()
		pts := make(plotter.XYs, 200)
		for i := range pts {
			pts[i].X, pts[i].Y = float64(i), float64(i%50)
		}
		l, _ := plotter.NewLine(pts)
		p.Add(l)
		for {
			if err := savePlot(p, nil, filepath.Join(dir, PlotFCTCDF+".png")); err != nil {
				panic(err)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, PlotFCTCDF+".png")
	tmpPrefix := "." + PlotFCTCDF + ".png.tmp-"
	for i, wait := range []time.Duration{30, 70, 110, 170, 230, 290} {
		before, _ := os.Stat(path) // the last child's file; nil before the first
		cmd := exec.Command(exe, "-test.run=^TestPlotSurvivesSIGKILL$")
		cmd.Env = append(os.Environ(), "FABRICLAB_PLOT_KILL_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() { cmd.Process.Signal(syscall.SIGKILL); <-exited }
		// until polls cond while the child runs, as long as the child takes within a bound far above any
		// machine's: a fixed 20 s for the first file, passed silently when it expired, made the first
		// kill's check fail on a file never written; the later kills came before the child wrote at all.
		until := func(what string, cond func() bool) {
			for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(time.Millisecond) {
				select {
				case <-exited:
					t.Fatalf("kill %d: the writer exited before %s", i, what)
				default:
				}
				if time.Now().After(deadline) {
					kill()
					t.Fatalf("kill %d: no %s in 5 minutes", i, what)
				}
			}
		}
		// The child is in its write loop once it has put a file of its own in place (a rename: another
		// file than the one before it started).
		until("write of its own", func() bool {
			fi, err := os.Stat(path)
			return err == nil && (before == nil || !os.SameFile(fi, before))
		})
		// Meanwhile a reader (lab report's user opening the PNG) must never see part of one.
		for end := time.Now().Add(wait * time.Millisecond); time.Now().Before(end); {
			if b, err := os.ReadFile(path); err == nil {
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					kill()
					t.Fatalf("read while being written: %s is not a whole PNG (%d bytes): %v", path, len(b), err)
				}
			}
		}
		// Killed mid-write: once the next write's temporary exists.
		until("temporary being written", func() bool {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), tmpPrefix) {
					return true
				}
			}
			return false
		})
		kill()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("kill %d after %v ms: %s is not a whole PNG (%d bytes): %v", i, wait, path, len(b), err)
		}
	}
	if err := clearPlots(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), PlotFCTCDF) {
			t.Errorf("clearPlots left %s", e.Name())
		}
	}
}

// TestPortsCSVMalformed: a netns run's malformed frames reach the run directory per port
// (ports.csv malformed_frames; issue 23, defect 8), also for a device with no queue counters.
func TestPortsCSVMalformed(t *testing.T) {
	log := &records.Log{Counters: []records.Counters{
		{Device: 0, MaxQueue: []int{100, 200}, Malformed: 7, MalformedPorts: []uint64{0, 7}},
		{Device: 1, Malformed: 3, MalformedPorts: []uint64{3}},
	}}
	var b bytes.Buffer
	if err := WritePortsCSV(&b, log, Meta{}); err != nil {
		t.Fatal(err)
	}
	want := "device,name,port,max_queue_bytes,malformed_frames\n0,,0,100,0\n0,,1,200,7\n1,,0,0,3\n"
	if b.String() != want {
		t.Errorf("ports.csv:\n%s\nwant\n%s", b.String(), want)
	}
}
