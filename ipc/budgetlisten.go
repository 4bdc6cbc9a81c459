package ipc

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// ListenerOptions shape a listener that draws on a Budget.
type ListenerOptions struct {
	// Limit caps this listener's own open connections (the metrics
	// listener's share): at the limit, the listener's oldest
	// unauthenticated connection gives way, else the new one is refused.
	// 0 is no cap of its own.
	Limit int
	// PreAuth closes a connection still unauthenticated after this long
	// (PostgreSQL's authentication_timeout); 0 is never.
	PreAuth time.Duration
	// Refuse, when set, tells a connection refused for room why before it
	// is closed (an HTTP 503); it must not block for long.
	Refuse func(c net.Conn, err error)
}

// Listener wraps ln so that every connection it accepts holds a slot of
// b until it closes. A connection that gets no room is refused and closed
// at once, and Accept goes on to the next; its callers see only admitted
// connections, as *BudgetConn.
func (b *Budget) Listener(ln net.Listener, o ListenerOptions) net.Listener {
	return &budgetListener{Listener: ln, b: b, o: o}
}

type budgetListener struct {
	net.Listener
	b *Budget
	o ListenerOptions

	mu   sync.Mutex
	open list.List // of *BudgetConn, oldest first (kept only with a Limit)
}

func (l *budgetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.makeRoom() {
			l.b.mu.Lock()
			l.b.refused++
			l.b.mu.Unlock()
			l.refuse(c, errListenerFull)
			continue
		}
		bc := &BudgetConn{Conn: c, l: l}
		slot, err := l.b.Admit(func() { _ = bc.Conn.Close() })
		if err != nil {
			l.refuse(c, err)
			continue
		}
		bc.slot = slot
		if l.o.Limit > 0 {
			l.mu.Lock()
			bc.elem = l.open.PushBack(bc)
			l.mu.Unlock()
		}
		if l.o.PreAuth > 0 {
			bc.timer = time.AfterFunc(l.o.PreAuth, func() {
				if slot.Pending() {
					_ = bc.Conn.Close()
				}
			})
		}
		return bc, nil
	}
}

// makeRoom reports whether the listener's Limit leaves room for one more,
// closing its oldest unauthenticated connection if that is what it takes.
func (l *budgetListener) makeRoom() bool {
	if l.o.Limit <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open.Len() < l.o.Limit {
		return true
	}
	for e := l.open.Front(); e != nil; e = e.Next() {
		bc := e.Value.(*BudgetConn)
		if bc.slot.Pending() {
			l.open.Remove(e)
			bc.elem = nil
			_ = bc.Conn.Close()
			return true
		}
	}
	return false
}

var errListenerFull = &listenerFull{}

type listenerFull struct{}

func (*listenerFull) Error() string { return "too many connections on this listener" }

func (l *budgetListener) refuse(c net.Conn, err error) {
	if l.o.Refuse != nil {
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		l.o.Refuse(c, err)
	}
	_ = c.Close()
}

// BudgetConn is a connection that holds a slot of a Budget; Close gives
// it back.
type BudgetConn struct {
	net.Conn
	l     *budgetListener
	slot  *Slot
	elem  *list.Element // in l.open, with a Limit
	timer *time.Timer
	once  sync.Once
}

// Slot is the connection's place in the budget: Authenticate it once the
// client proves who it is.
func (c *BudgetConn) Slot() *Slot { return c.slot }

// Close closes the connection and releases its slot.
func (c *BudgetConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.slot.Release()
		c.l.mu.Lock()
		if c.elem != nil {
			c.l.open.Remove(c.elem)
			c.elem = nil
		}
		c.l.mu.Unlock()
	})
	return err
}
