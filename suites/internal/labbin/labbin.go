// Package labbin gives the suites that drive the lab command as a user would the binary to drive.
//
// Each of those suites used to link its own copy of cmd/lab in its BeforeSuite. That is a few seconds
// natively, but about a minute per link under QEMU's emulator (the Vagrant VM without KVM), where
// several suites did it again one after the other. scripts/test.sh now builds the binary once from the
// tree it tests and names it in FABRICLAB_LAB_BIN; a suite run on its own (ginkgo ./suites/smoke)
// still builds its own.
package labbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Env names a lab binary built from the tree under test, for every suite of one run.
const Env = "FABRICLAB_LAB_BIN"

// Path returns the lab binary named by FABRICLAB_LAB_BIN, or, when it is unset, one built from this
// module's cmd/lab into dir with the go command and the given build flags. A variable that names
// something that is not an executable file is an error, not a reason to build: the run asked for that
// binary.
func Path(dir string, buildFlags ...string) (string, error) {
	if bin := os.Getenv(Env); bin != "" {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", Env, bin, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s: not an executable file", Env, bin)
		}
		return bin, nil
	}
	bin := filepath.Join(dir, "lab")
	args := append(append([]string{"build"}, buildFlags...), "-o", bin, "github.com/fabriclab/fabriclab/cmd/lab")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/lab: %v\n%s", err, out)
	}
	return bin, nil
}
