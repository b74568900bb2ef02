package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/report"
	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/bounded"
)

// A run is written into a hidden directory .NAME.incomplete-XXXX next to its -o and renamed into place
// when complete. A run killed with SIGKILL cannot remove it, so the directory carries an owner file that
// the lab run writing it holds an flock on for as long as it writes; the next lab run into the same
// parent, or lab clean, removes those whose lock is free. A lock needs no PID, host name or clock to
// mean something: it is the kernel's (the file server's, on NFSv4 or CephFS), released when its holder
// dies whatever container, pod or host that ran in (a coordinator container killed with its run
// half-written is judged from the host or from the next container). The owner file also says who wrote
// it ("pid starttime host bootid flock": the start time, field 22 of /proc/PID/stat, tells that process
// from a later one that reused its PID; the boot id a host rebooted since), which is what is judged
// where the filesystem takes no locks, and for files written by an older lab ("pid starttime host"):
// there a directory another host owns is never judged, only reported. The owner file is removed, and
// its lock released, before the rename.

const incompleteOwner = ".owner"

// ownerLocks are the owner files this process holds locked, by run directory.
var ownerLocks sync.Map

// markIncomplete writes dir's owner file, locked: this process.
func markIncomplete(dir string) error {
	st, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// By rename: an owner file is never seen half written (read as unmarked); locked before, so it is
	// never seen unlocked while this process lives.
	path := filepath.Join(dir, incompleteOwner)
	f, err := os.CreateTemp(dir, ".owner-")
	if err != nil {
		return err
	}
	how := "flock"
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		how = "nolock" // a filesystem without locks: judged by the rest
	}
	if _, err := fmt.Fprintf(f, "%d %s %s %s %s\n", os.Getpid(), st, host, bootID(), how); err != nil {
		f.Close()
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		return err
	}
	ownerLocks.Store(dir, f)
	return nil
}

// releaseIncomplete removes dir's owner file and releases its lock: the directory is about to be
// renamed into place or removed.
func releaseIncomplete(dir string) error {
	err := os.Remove(filepath.Join(dir, incompleteOwner))
	if f, ok := ownerLocks.LoadAndDelete(dir); ok {
		f.(*os.File).Close()
	}
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// removeIncomplete removes an unfinished run directory this process made.
func removeIncomplete(dir string) {
	releaseIncomplete(dir)
	os.RemoveAll(dir)
}

// bootID is this boot of the kernel's random id ("-" where there is none): the same in every container
// of a host, another after a reboot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "-"
	}
	return strings.TrimSpace(string(b))
}

// procStart is field 22 of /proc/PID/stat: when the process started, in clock ticks since boot.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces and parentheses
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return f[19], nil
}

// lockFree says whether nobody holds an flock on path (true), somebody does (false), or it cannot be
// told (err: no such file, or a filesystem without locks). The probe holds the lock for an instant.
func lockFree(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0) // writable: NFS clients emulate flock with byte-range locks, which need it
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// incompleteState says whether an incomplete run directory's owner is gone ("stale", safe to remove),
// still running ("running"), on another host and not to be judged here ("foreign": an owner file
// without a lock; never removed), or unknown ("unmarked": no readable owner file, e.g. in the instant
// between its creation and its marking; never removed).
func incompleteState(dir string) string {
	path := filepath.Join(dir, incompleteOwner)
	b, err := bounded.ReadFile(path, 4096)
	if err != nil {
		return "unmarked"
	}
	f := strings.Fields(string(b))
	if len(f) == 5 && f[4] == "flock" {
		if free, err := lockFree(path); err == nil {
			if free {
				return "stale"
			}
			return "running"
		}
	}
	if len(f) == 5 {
		if host, err := os.Hostname(); err != nil || host != f[2] {
			return "foreign"
		}
		if f[3] != "-" && f[3] != bootID() {
			return "stale" // this host, an earlier boot
		}
		f = f[:2]
	}
	if len(f) == 3 {
		if host, err := os.Hostname(); err != nil || host != f[2] {
			return "foreign"
		}
		f = f[:2]
	}
	if len(f) != 2 {
		return "unmarked"
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return "unmarked"
	}
	if st, err := procStart(pid); err == nil && st == f[1] {
		return "running"
	}
	return "stale"
}

// cleanIncomplete removes the stale incomplete run directories directly in parent and returns them;
// unmarked ones are reported on w, left in place.
func cleanIncomplete(parent string, w io.Writer) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ".") || !strings.Contains(e.Name(), ".incomplete-") {
			continue
		}
		p := filepath.Join(parent, e.Name())
		switch incompleteState(p) {
		case "stale":
			if err := os.RemoveAll(p); err != nil {
				return removed, err
			}
			removed = append(removed, p)
		case "foreign":
			if fi, err := e.Info(); w != nil && err == nil && time.Since(fi.ModTime()) > time.Hour {
				fmt.Fprintf(w, "lab: note: %s is an unfinished run directory of a lab run on another host, on a filesystem without locks (its .owner file says which); remove it by hand if that run is gone\n", p)
			}
		case "unmarked":
			// A run marks its directory right after making it: a young unmarked one is most likely that.
			if fi, err := e.Info(); w != nil && err == nil && time.Since(fi.ModTime()) > time.Minute {
				fmt.Fprintf(w, "lab: note: %s is an unfinished run directory without an owner file (an older lab's?); remove it by hand if no run is writing it\n", p)
			}
		}
	}
	return removed, nil
}

// reapStatus makes the status file at path say died when it says running and nobody holds its run's
// lock (RunStatus.Orphaned); it holds the lock while it rewrites the file, so a run starting meanwhile
// (lockRun) writes its own status after. It says whether it rewrote the file.
func reapStatus(path string) (bool, error) {
	b, err := bounded.ReadFile(path, bounded.Spec)
	if err != nil {
		return false, err
	}
	var st report.RunStatus
	if json.Unmarshal(b, &st) != nil || st.Status != "running" {
		return false, nil
	}
	dir := filepath.Dir(path)
	base := strings.TrimSuffix(filepath.Base(path), report.StatusSuffix)
	f, err := os.OpenFile(filepath.Join(dir, "."+base+".lock"), os.O_RDWR, 0)
	if err != nil {
		return false, nil // no lock to judge by: left as it is
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false, nil // held: running
	}
	if b, err = bounded.ReadFile(path, bounded.Spec); err != nil || json.Unmarshal(b, &st) != nil || st.Status != "running" {
		return false, err // ended just before the lock was taken
	}
	st.MarkDied()
	return true, writeJSONAtomic(path, &st)
}

func init() {
	cmd := &cobra.Command{
		Use:   "clean [DIR...]",
		Short: "remove what killed runs left: hidden .NAME.incomplete-* directories whose lab run is gone",
		Long: `A lab run writes into a hidden .NAME.incomplete-XXXX directory next to -o and renames it into place
when complete; killed with SIGKILL it leaves that directory behind. lab clean removes those in each DIR
(default: results) and in the directories below it whose owner process (recorded in the directory) is no
longer running (nobody holds the lock on its owner file); the next lab run into the same directory does
the same for its own. Unfinished directories of a run still going, and unmarked ones, are left alone.
A tree run's status file that says running while nobody holds the run's lock (its lab run --index
process was killed) is rewritten to say died.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dflt := len(args) == 0
			if dflt {
				args = []string{"results"}
			}
			for _, d := range args {
				fi, err := os.Stat(d)
				switch {
				case dflt && errors.Is(err, fs.ErrNotExist):
					// No results directory: no run ever wrote here, so nothing to clean.
					fmt.Fprintln(cmd.OutOrStdout(), "lab clean: no results directory here: nothing to clean")
					return nil
				case err != nil:
					return err
				case !fi.IsDir():
					return usage(fmt.Errorf("%s: not a directory: lab clean takes the directories runs were written into (default results)", d))
				}
			}
			n := 0
			for _, d := range args {
				err := filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
					if err != nil {
						return err
					}
					if !e.IsDir() {
						if !strings.HasSuffix(e.Name(), report.StatusSuffix) {
							return nil
						}
						reaped, err := reapStatus(p)
						if reaped {
							fmt.Fprintln(cmd.OutOrStdout(), "died", p)
						}
						return err
					}
					if strings.Contains(e.Name(), ".incomplete-") {
						return filepath.SkipDir
					}
					removed, err := cleanIncomplete(p, cmd.ErrOrStderr())
					for _, r := range removed {
						fmt.Fprintln(cmd.OutOrStdout(), "removed", r)
					}
					n += len(removed)
					return err
				})
				if err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab clean: %d unfinished run directories removed\n", n)
			return nil
		},
	}
	root.AddCommand(cmd)
}
