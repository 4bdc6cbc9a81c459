package sched

import "slices"

// group is the step group a sequence belongs to: its channel when that
// channel runs in steps of its own, else the shared group "".
func (s *Scheduler) group(q *Sequence) string {
	if s.cfg.OwnSteps[q.Channel] {
		return q.Channel
	}
	return ""
}

// chooseGroup picks the group this step serves: when sequences of more
// than one group run or wait, the groups take the steps in turn (sorted
// by name, the shared group first), so none starves; else every
// sequence may share the step.
func (s *Scheduler) chooseGroup() {
	s.stepGroup = ""
	if len(s.cfg.OwnSteps) == 0 {
		return
	}
	var groups []string
	for _, q := range append(s.running[:len(s.running):len(s.running)], s.waiting...) {
		if g := s.group(q); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	if len(groups) < 2 {
		if len(groups) == 1 {
			s.stepGroup = groups[0]
		}
		return
	}
	slices.Sort(groups)
	s.turn++
	s.stepGroup = groups[s.turn%len(groups)]
}

// inGroup reports whether q may run in this step.
func (s *Scheduler) inGroup(q *Sequence) bool {
	return len(s.cfg.OwnSteps) == 0 || s.group(q) == s.stepGroup
}
