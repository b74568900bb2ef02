package agent

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/fabriclab/fabriclab/clock"
	"golang.org/x/sys/unix"
)

// waiter sleeps until a port has frames, the wake fd fires, or a timeout with nanosecond resolution,
// and says which of them are ready (indices into the agent's fds: ports, then the wake fd, then the
// control channel when the loop reads it itself).
//
// It uses epoll_pwait2 (Linux 5.11+): ppoll costs the kernel a pass over every descriptor on each call,
// and on NDC(3,1) (37 descriptors, one or two ready per wake-up) that pass was 43% of the loop's CPU
// (pprof). epoll_wait's millisecond timeout is too coarse for a link clock, hence pwait2's timespec. On
// older kernels it falls back to ppoll.
type waiter struct {
	fds    []unix.PollFd // ppoll fallback, and the descriptors to register
	epfd   int           // -1: ppoll
	events []unix.EpollEvent
	ready  []int
}

func newWaiter(fds []unix.PollFd) (*waiter, error) {
	w := &waiter{fds: fds, epfd: -1}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return w, nil
	}
	for i, f := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)} // Fd carries the index back
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, int(f.Fd), &ev); err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	w.epfd, w.events = epfd, make([]unix.EpollEvent, len(fds))
	// Probe once: a kernel without epoll_pwait2 says ENOSYS, and ppoll does the job.
	if _, err := w.pwait2(0); errors.Is(err, unix.ENOSYS) {
		unix.Close(epfd)
		w.epfd = -1
	}
	return w, nil
}

func (w *waiter) pwait2(d clock.Time) (int, error) {
	ts := clock.ToTimespec(d)
	n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(w.epfd), uintptr(unsafe.Pointer(&w.events[0])),
		uintptr(len(w.events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// wait sleeps at most d and returns the ready indices (valid until the next call).
func (w *waiter) wait(d clock.Time) ([]int, error) {
	w.ready = w.ready[:0]
	if w.epfd >= 0 {
		n, err := w.pwait2(d)
		if err != nil {
			return nil, err
		}
		for _, ev := range w.events[:n] {
			w.ready = append(w.ready, int(ev.Fd))
		}
		return w.ready, nil
	}
	ts := clock.ToTimespec(d)
	n, err := unix.Ppoll(w.fds, &ts, nil)
	if err != nil || n == 0 {
		return nil, err
	}
	for i, f := range w.fds {
		if f.Revents&(unix.POLLIN|unix.POLLERR) != 0 {
			w.ready = append(w.ready, i)
		}
	}
	return w.ready, nil
}

func (w *waiter) close() {
	if w.epfd >= 0 {
		unix.Close(w.epfd)
		w.epfd = -1
	}
}

// add watches one more descriptor, at the next index.
func (w *waiter) add(fd int) error {
	i := len(w.fds)
	w.fds = append(w.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	if w.epfd >= 0 {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			w.fds = w.fds[:i]
			return fmt.Errorf("epoll_ctl: %w", err)
		}
		w.events = append(w.events, unix.EpollEvent{})
	}
	return nil
}

// unwatch stops waking for fds[i]: the loop looks at that port's ring itself (agent.unwatchRings).
func (w *waiter) unwatch(i int) error {
	if w.epfd >= 0 {
		return unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(w.fds[i].Fd), nil)
	}
	w.fds[i].Fd = -1 // ppoll skips a negative descriptor
	return nil
}
