//go:build unix

package nn_test

import "syscall"

// cpuSeconds returns the process's user+system CPU time, so that
// benchmarks on a shared machine can report work per CPU-second as well as
// per wall-clock second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
