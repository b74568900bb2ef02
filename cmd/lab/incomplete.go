package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/bounded"
)

// A run is written into a hidden directory .NAME.incomplete-XXXX next to its -o and renamed into place
// when complete. A run killed with SIGKILL cannot remove it, so the directory carries an owner file
// ("pid starttime" of the lab run that writes it, the start time being field 22 of /proc/PID/stat, which
// tells that process from a later one that reused its PID, then its host name); the next lab run into
// the same parent, or lab clean, removes those whose owner is gone. The owner file is removed before the
// rename. A PID means something only on its own machine (and in its own PID namespace: each pod or
// container has its own, with its own host name): a tree on shared storage is filled by lab run --index
// processes on many machines, so a directory another host owns is never judged, only reported.

const incompleteOwner = ".owner"

// markIncomplete writes dir's owner file: this process.
func markIncomplete(dir string) error {
	st, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// By rename: an owner file is never seen half written (read as unmarked).
	path := filepath.Join(dir, incompleteOwner)
	tmp, err := writeTemp(path, []byte(fmt.Sprintf("%d %s %s\n", os.Getpid(), st, host)))
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
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

// incompleteState says whether an incomplete run directory's owner is gone ("stale", safe to remove),
// still running ("running"), on another host ("foreign": its PID cannot be checked here; never
// removed), or unknown ("unmarked": no readable owner file, e.g. written by an older lab or in the
// instant between its creation and its marking; never removed).
func incompleteState(dir string) string {
	b, err := bounded.ReadFile(filepath.Join(dir, incompleteOwner), 4096)
	if err != nil {
		return "unmarked"
	}
	f := strings.Fields(string(b))
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
				fmt.Fprintf(w, "lab: note: %s is an unfinished run directory of a lab run on another host (its .owner file says which); remove it by hand if that run is gone\n", p)
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

func init() {
	cmd := &cobra.Command{
		Use:   "clean [DIR...]",
		Short: "remove what killed runs left: hidden .NAME.incomplete-* directories whose lab run is gone",
		Long: `A lab run writes into a hidden .NAME.incomplete-XXXX directory next to -o and renames it into place
when complete; killed with SIGKILL it leaves that directory behind. lab clean removes those in each DIR
(default: results) and in the directories below it whose owner process (recorded in the directory) is no
longer running; the next lab run into the same directory does the same for its own. Unfinished
directories of a run still going, and unmarked ones, are left alone.`,
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
					if err != nil || !e.IsDir() {
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
