package run

import (
	"context"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"
)

// AllCores is the Unit.Cores of a unit that keeps every core busy (its
// goroutines follow GOMAXPROCS) or that must not run beside other units:
// it runs alone. It is the zero value, so a unit that says nothing about
// its cores is never run beside another.
const AllCores = 0

// jobs is the number of unit slots a run of cfg uses: cfg.Jobs, or
// GOMAXPROCS when that is 0.
func (c Config) jobs() int {
	if c.Jobs > 0 {
		return c.Jobs
	}
	return runtime.GOMAXPROCS(0)
}

// slots is how many of a run's jobs slots a unit declaring cores takes:
// AllCores (or more cores than there are slots) takes them all.
func slots(cores, jobs int) int {
	if cores <= AllCores || cores > jobs {
		return jobs
	}
	return cores
}

// poolUnit is one unit the pool runs: a planned unit of block, with the
// configuration it runs under (its progress lines carry its name).
type poolUnit struct {
	block Block
	unit  plannedUnit
	cfg   Config
}

// poolEvents are the pool's callbacks. They are called from the goroutine
// that called runPool, one at a time, so they need no locks.
type poolEvents struct {
	// start is called just before unit i starts.
	start func(i int)
	// done is called when unit i has finished, with its result and what
	// it took.
	done func(i int, r unitResult, m measure)
}

// measure is what one unit took: its wall time and, when it ran alone (it
// took every slot, so nothing else of this process ran beside it), the
// process's CPU time over its run, which is then the unit's own (its
// tools included). A unit sharing the process with others has no CPU time
// of its own to read (CPUKnown false).
type measure struct {
	Wall, CPU time.Duration
	CPUKnown  bool
}

// runPool runs units on jobs slots: a unit takes slots(Cores, jobs) of
// them while it runs. Whenever slots are free it starts, in the order
// given (but the Long units first when jobs > 1), every waiting unit that
// fits, so single-core units overlap one another and a unit that takes
// every slot runs alone. With one slot the units run one after another in
// the order given. Results are handed to ev.done as units finish, in any
// order; the caller places them by index, which is what keeps the output
// independent of the completion order. A cancelled ctx stops new starts;
// runPool waits for the running units and returns the context's error.
func runPool(ctx context.Context, units []poolUnit, jobs int, ev poolEvents) error {
	type finished struct {
		i, slots int
		r        unitResult
		err      error
		m        measure
	}
	fin := make(chan finished)
	waiting := make([]int, len(units))
	for i := range waiting {
		waiting[i] = i
	}
	if jobs > 1 {
		slices.SortStableFunc(waiting, func(a, b int) int {
			switch la, lb := units[a].unit.long, units[b].unit.long; {
			case la && !lb:
				return -1
			case lb && !la:
				return 1
			}
			return 0
		})
	}
	free, running := jobs, 0
	var firstErr error
	stopped := false
	for {
		if firstErr != nil || ctx.Err() != nil {
			stopped = stopped || len(waiting) > 0
			waiting = nil
		}
		rest := waiting[:0]
		for _, i := range waiting {
			u := units[i]
			n := slots(u.unit.cores, jobs)
			if n > free {
				rest = append(rest, i)
				continue
			}
			free -= n
			running++
			ev.start(i)
			alone := n == jobs // it took every slot: nothing runs beside it
			go func() {
				t0 := time.Now()
				c0, ok0 := processCPU()
				r, err := runUnit(ctx, u.block, u.unit, u.cfg)
				m := measure{Wall: time.Since(t0)}
				if c1, ok1 := processCPU(); alone && ok0 && ok1 {
					m.CPU, m.CPUKnown = c1-c0, true
				}
				fin <- finished{i: i, slots: n, r: r, err: err, m: m}
			}()
		}
		waiting = rest
		if running == 0 {
			break
		}
		f := <-fin
		free += f.slots
		running--
		if f.err != nil {
			if firstErr == nil {
				firstErr = f.err
			}
			continue
		}
		ev.done(f.i, f.r, f.m)
	}
	if firstErr == nil && stopped {
		firstErr = ctx.Err()
	}
	return firstErr
}

// lockedWriter serialises writes to w: units running at once share the
// progress writer, and each progress line is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// slowUnit is the wall time from which a finished unit gets a progress
// line of its own (shorter ones would only add noise).
const slowUnit = time.Second
