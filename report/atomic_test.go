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
		p := plot.New()
		pts := make(plotter.XYs, 2000)
		for i := range pts {
			pts[i].X, pts[i].Y = float64(i), float64(i*i%977)
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
	for i, wait := range []time.Duration{30, 70, 110, 170, 230, 290} {
		cmd := exec.Command(exe, "-test.run=^TestPlotSurvivesSIGKILL$")
		cmd.Env = append(os.Environ(), "FABRICLAB_PLOT_KILL_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Stat(path); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Meanwhile a reader (lab report's user opening the PNG) must never see part of one.
		for end := time.Now().Add(wait * time.Millisecond); time.Now().Before(end); {
			if b, err := os.ReadFile(path); err == nil {
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					cmd.Process.Signal(syscall.SIGKILL)
					cmd.Wait()
					t.Fatalf("read while being written: %s is not a whole PNG (%d bytes): %v", path, len(b), err)
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
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
