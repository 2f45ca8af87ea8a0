//go:build unix

package run

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process and its
// finished children (the external tools units run) have used.
func processCPU() (time.Duration, bool) {
	var self, kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
		return 0, false
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime), true
}
