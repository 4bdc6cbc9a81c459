package engine

import (
	"time"

	"github.com/batchd/batchd/backend"
)

// Sleep asks the engine to release its KV memory once it has nothing to do;
// the next request wakes it. The prefix cache is emptied (its blocks' data
// are gone). weights also drops the resident pages of the weights.
func (e *Engine) Sleep(weights bool) {
	e.mu.Lock()
	e.sleepReq, e.sleepWeights = true, weights
	e.mu.Unlock()
	e.poke()
}

// Sleeping reports whether the engine has released its memory.
func (e *Engine) Sleeping() bool { return e.asleep.Load() }

// maybeSleep runs in the loop: it releases memory if asked and idle.
func (e *Engine) maybeSleep() {
	e.mu.Lock()
	req, weights := e.sleepReq, e.sleepWeights
	e.sleepReq = false
	e.mu.Unlock()
	if !req || e.asleep.Load() || e.sched.Running() > 0 || e.sched.Waiting() > 0 {
		return
	}
	sl, ok := e.backend.(backend.Sleeper)
	if !ok {
		return
	}
	e.saveCache("sleep")
	e.unpin()
	e.pool.ResetCache()
	if err := sl.Release(weights); err != nil {
		e.log.Error("release memory for sleep", "err", err)
		return
	}
	e.pool.Untouch()
	if e.spec.drafter != nil {
		if err := e.spec.drafter.sleep(weights); err != nil {
			e.log.Error("release the draft model's memory for sleep", "err", err)
		}
	}
	e.mu.Lock()
	e.rec.sleeps++
	e.mu.Unlock()
	e.publish() // the emptied cache shows before Sleeping does
	e.asleep.Store(true)
	e.log.Info("sleeping: KV memory released", "weights_released", weights)
}

// wakeUp restores memory before the first step after a sleep.
func (e *Engine) wakeUp() error {
	if !e.asleep.Load() {
		return nil
	}
	start := time.Now()
	if err := e.backend.(backend.Sleeper).Restore(); err != nil {
		return err
	}
	if e.spec.drafter != nil {
		if err := e.spec.drafter.wake(); err != nil {
			e.log.Error("restore the draft model's memory: drafting stops", "err", err)
			e.spec.Method = ""
		}
	}
	e.asleep.Store(false)
	e.loadCache("wake")
	e.mu.Lock()
	e.warm.repin = len(e.warm.pins) > 0
	e.mu.Unlock()
	d := time.Since(start)
	e.mu.Lock()
	e.rec.wakes++
	e.rec.lastWake = d
	e.mu.Unlock()
	e.log.Info("woke up", "wake_seconds", d.Seconds())
	return nil
}

// wakeForWork wakes a sleeping engine that has requests waiting before
// they are scheduled, so the saved prefix cache is read back before the
// first of them looks it up.
func (e *Engine) wakeForWork() {
	if e.asleep.Load() && e.sched.Waiting() > 0 {
		if err := e.wakeUp(); err != nil {
			e.log.Error("wake from sleep failed", "err", err)
		}
	}
}
