package bench

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A thread that ran during the window and exited before its end still counts: its CPU is in the
// process's (a sum over the threads alive at the end left it out).
func TestProcessCPUCountsExitedThreads(t *testing.T) {
	const burn = 100 * time.Millisecond
	pid := os.Getpid()
	c0, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf("/proc/%d/task/%d", pid, burnAndExit(pid, burn))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not end", task)
		}
	}
	c1, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if c1-c0 < burn {
		t.Fatalf("the process's CPU grew %v while a thread that has exited since used %v", c1-c0, burn)
	}
	b, err := os.ReadFile("/proc/sys/kernel/pid_max") // pids are below it
	if err != nil {
		t.Fatal(err)
	}
	var pidMax int
	fmt.Sscan(string(b), &pidMax)
	for _, bad := range []int{0, pidMax, 1 << 30} {
		if _, err := processCPU(bad); err == nil {
			t.Errorf("no error for pid %d, which is no process", bad)
		}
	}
}

// burnAndExit has a new thread use burn of CPU and end, and returns its id. Not the main thread: that
// one is parked, not ended, when its goroutine exits locked.
func burnAndExit(pid int, burn time.Duration) int {
	for {
		tid, burnIt := make(chan int), make(chan bool)
		go func() {
			runtime.LockOSThread() // never unlocked when it burns: the thread ends with the goroutine
			tid <- unix.Gettid()
			if !<-burnIt {
				runtime.UnlockOSThread()
				return
			}
			// The thread may have run other goroutines before (another test's spinning): burn counts
			// from now.
			for start := threadCPU(); threadCPU()-start < burn; {
			}
		}()
		id := <-tid
		burnIt <- id != pid
		if id != pid {
			return id
		}
	}
}
