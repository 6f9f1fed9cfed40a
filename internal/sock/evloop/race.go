package evloop

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/sockaddr"
)

// A Race runs in the loop's thread from its answers to its winner: the
// AAAA and A queries leave on one socket from the caller's goroutine, the
// loop reads the answers, starts each attempt the Racer asks for (after
// the batch that brought the answer, as a Lookup's connect), watches the
// attempts' sockets, and on the first to connect closes the others and
// sends the request on it. No goroutine wakes between an answer and a
// SYN, or between a Connection Attempt Delay's end and the next SYN, so
// what a dual-stack path costs against a pinned one is the race's own
// waits, not the client's scheduling.

// openRace makes the queries' socket and sends both; on an error nothing
// is left open.
func (l *loop) openRace(c *conn) (string, error) {
	rc := c.x.Race
	if rc.Start != nil {
		rc.Start()
	}
	rc.Racer.Begin(time.Now())
	fd, err := ask(rc.Server, rc.Source, rc.AAAA, rc.A)
	if err != nil {
		return "resolve", err
	}
	c.fd = fd
	c.race = &race{spare: [2]int{-1, -1}}
	c.res.LookupLocal = localAddr(fd)
	// A socket of each family is made while the answers are on their way,
	// so only the connect call is left for after them.
	for _, v6 := range []bool{true, false} {
		if s, err := newSocket(false, netip.Addr{}, v6); err == nil {
			c.race.spare[family(v6)] = s
		}
	}
	c.sends.StartPair(rc.Stub, time.Now())
	c.resendAt = c.sends.Due
	return "", nil
}

// raceAnswer takes a datagram read on a Race's socket (in l.buf, its
// control messages in l.oob) and has the race stepped after the batch.
func (l *loop) raceAnswer(c *conn, n, oobn int) {
	rc := c.x.Race
	ipv6, addr, done, err := rc.Answer(l.buf[:n])
	rs := c.race
	if !done || rs.answered[family(ipv6)] {
		return // not an answer, or a second one (to a query sent again)
	}
	rs.answered[family(ipv6)] = true // no more sending of this query
	if rc.Again != nil && errors.Is(err, ErrAgain) {
		l.askAgain(c, ipv6)
		return
	}
	at := kstamp.Parse(l.oob[:oobn])
	if at.IsZero() {
		at = time.Now()
	}
	l.raceAnswered(c, ipv6, addr, err, at)
}

// raceAnswered gives the race a family's answer, received at at, and has
// it stepped after the batch.
func (l *loop) raceAnswered(c *conn, ipv6 bool, addr netip.Addr, err error, at time.Time) {
	var addrs []netip.Addr
	if addr.IsValid() && err == nil {
		addrs = []netip.Addr{addr}
	}
	c.x.Race.Racer.Answer(ipv6, addrs, err, at)
	c.race.due = at
	l.stepSoon(c)
}

// askAgain has Race.Again ask a family's question on a goroutine; its
// answer comes back through takeLate.
func (l *loop) askAgain(c *conn, ipv6 bool) {
	rs := c.race
	if rs.stopAgain == nil {
		rs.againCtx, rs.stopAgain = context.WithCancel(context.Background())
	}
	// Taken here: the caller may drop its Exchange's Race once the
	// exchange is over, and this goroutine may outlive it a little.
	ctx, again := rs.againCtx, c.x.Race.Again
	go func() {
		addr, err := again(ctx, ipv6)
		la := lateAnswer{c: c, rs: rs, ipv6: ipv6, addr: addr, err: err, at: time.Now()}
		l.mu.Lock()
		l.late = append(l.late, la)
		l.mu.Unlock()
		l.poke()
	}()
}

// takeLate gives the races still under way the answers Race.Again
// brought.
func (l *loop) takeLate() {
	l.mu.Lock()
	late := l.late
	l.late = nil
	l.mu.Unlock()
	for _, la := range late {
		if la.c.race == la.rs { // else its race is over
			l.raceAnswered(la.c, la.ipv6, la.addr, la.err, la.at)
		}
	}
}

// raceUnanswered gives the families still waiting for an answer err
// (the queries' socket failed: nothing listens at the server's port).
func (l *loop) raceUnanswered(c *conn, err error) {
	rs := c.race
	for _, v6 := range []bool{true, false} {
		if !rs.answered[family(v6)] {
			rs.answered[family(v6)] = true
			c.x.Race.Racer.Answer(v6, nil, err, time.Now())
		}
	}
	rs.due = time.Time{}
	l.stepSoon(c)
}

// stepSoon has the race stepped once the batch's sockets are read.
func (l *loop) stepSoon(c *conn) {
	if !c.stepping {
		c.stepping = true
		l.complete = append(l.complete, c)
	}
}

// step starts the attempts the race asks for now, until it waits or
// ends; it fails the exchange when the race is lost.
func (l *loop) step(c *conn, now time.Time) {
	rs := c.race
	rc := c.x.Race
	if rs.winner != nil {
		return // won: the winner takes over after the batch
	}
	for c.race != nil {
		to, wake, err := rc.Racer.Step(now)
		if err != nil {
			phase := "resolve"
			if rs.started > 0 {
				phase = "connect"
			}
			l.finish(c, phase, err)
			return
		}
		if !to.IsValid() {
			rs.wake = wake
			if !wake.IsZero() && (l.wakeAt.IsZero() || wake.Before(l.wakeAt)) {
				l.wakeAt = wake
			}
			return
		}
		if rs.started == 0 {
			c.res.Resolved = now
			if !rs.due.IsZero() {
				c.res.AnswerRx = rs.due
			}
		}
		l.attempt(c, netip.AddrPortFrom(to, c.x.Remote.Port()))
		rs.due = time.Time{}
		now = time.Now()
	}
}

// attempt connects to one address; on a fast path the handshake is over
// when connect returns, and the request's first write wins the race at
// once, as open sends early.
func (l *loop) attempt(c *conn, to netip.AddrPort) {
	rs := c.race
	i := rs.started
	rs.started++
	racer := c.x.Race.Racer
	fd := rs.spare[family(to.Addr().Is6())]
	rs.spare[family(to.Addr().Is6())] = -1
	if fd < 0 {
		var err error
		if fd, err = newSocket(false, netip.Addr{}, to.Addr().Is6()); err != nil {
			racer.Failed(i, err, time.Now())
			return
		}
	}
	sa, err := sockaddr.Of(to)
	if err != nil {
		unix.Close(fd)
		racer.Failed(i, err, time.Now())
		return
	}
	at := time.Now()
	if !rs.due.IsZero() && at.After(rs.due) {
		c.res.ClientTurns += at.Sub(rs.due)
	}
	err = unix.Connect(fd, sa)
	if err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		racer.Failed(i, os.NewSyscallError("connect", err), time.Now())
		return
	}
	a := &conn{x: c.x, fd: fd, parent: c, attempt: i, to: to, ready: -1, closeFD: -1}
	if len(c.req) > 0 {
		at := time.Now() // before the write, as sendEarly's mark
		n, err := unix.Write(fd, c.req)
		switch {
		case err == nil:
			l.win(c, a, at, n, false)
			return
		case err != unix.EAGAIN && err != unix.EINTR:
			unix.Close(fd)
			racer.Failed(i, os.NewSyscallError("connect", err), time.Now())
			return
		}
	}
	if err := l.watch(a, unix.EPOLL_CTL_ADD); err != nil {
		unix.Close(fd)
		racer.Failed(i, err, time.Now())
		return
	}
	rs.attempts = append(rs.attempts, a)
}

// attemptEvent takes an event of an attempt's socket: connected (it wins)
// or failed (the race is stepped: the next attempt starts now).
func (l *loop) attemptEvent(a *conn, ev *unix.EpollEvent) {
	c := a.parent
	if c.race == nil || c.race.winner == a {
		return // the race is over (a's socket is closed or closing), or a won: what follows is the exchange's
	}
	switch {
	case ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0:
		err := handshakeError(a.fd)
		l.drop(a)
		c.x.Race.Racer.Failed(a.attempt, err, time.Now())
		c.race.due = time.Time{}
		l.stepSoon(c)
	case ev.Events&unix.EPOLLOUT != 0 && c.race.winner == nil:
		// It won; the request goes after the batch's reads, as every
		// send the loop makes on its own, so its way through the lab is
		// not in another exchange's end mark.
		c.race.winner, c.race.wonAt = a, time.Now()
		l.stepSoon(c)
	}
}

// drop takes a failed or losing attempt out of its race and closes its
// socket (off the loop, after the batch).
func (l *loop) drop(a *conn) {
	rs := a.parent.race
	if l.unregister(a) {
		l.toClose = append(l.toClose, a.fd)
	}
	for i, b := range rs.attempts {
		if b == a {
			rs.attempts = append(rs.attempts[:i], rs.attempts[i+1:]...)
			break
		}
	}
}

// win makes attempt a, connected at at, the exchange's connection: the
// other attempts, the spare sockets and the queries' socket are closed,
// and the request is sent (sent bytes of it are already). watched says
// a's socket is in the epoll set already.
func (l *loop) win(c *conn, a *conn, at time.Time, sent int, watched bool) {
	rs := c.race
	c.x.Race.Racer.Won(a.attempt, at)
	if watched {
		l.unregister(a)
	}
	for _, b := range rs.attempts {
		if b != a {
			l.drop(b)
		}
	}
	l.endRace(c)
	query := c.fd
	if !l.unregister(c) {
		return
	}
	c.res.FirstTx = kstamp.Sent(query, l.oob) // the first query's, long queued by now
	l.toClose = append(l.toClose, query)
	c.fd, c.x.Remote = a.fd, a.to
	c.up, c.res.Connected = true, at
	addressed(c)
	c.sent = sent
	c.res.BytesOut += int64(sent)
	op := unix.EPOLL_CTL_ADD
	if watched {
		op = unix.EPOLL_CTL_MOD
	}
	if err := l.watch(c, op); err != nil {
		unix.Close(c.fd)
		c.res.Phase, c.res.Err = "connect", err
		l.deliver(c)
		return
	}
	if err := l.send(c); err != nil {
		l.finish(c, "io", err)
	}
}

// endRace closes what the race still holds (attempts under way, spare
// sockets) and ends its attempts in the Racer; c is an ordinary exchange
// from then on.
func (l *loop) endRace(c *conn) {
	rs := c.race
	if rs == nil {
		return
	}
	for len(rs.attempts) > 0 {
		l.drop(rs.attempts[0])
	}
	for i, s := range rs.spare {
		if s >= 0 {
			l.toClose = append(l.toClose, s)
			rs.spare[i] = -1
		}
	}
	if rs.stopAgain != nil {
		rs.stopAgain()
	}
	c.x.Race.Racer.Abort(time.Now())
	c.race = nil
	c.resendAt = time.Time{}
}

// resendRace sends again the queries not answered yet, and says how
// many it sent.
func (l *loop) resendRace(c *conn) (int, error) {
	rc := c.x.Race
	n := 0
	for _, v6 := range []bool{true, false} {
		if c.race.answered[family(v6)] {
			continue
		}
		q := rc.A
		if v6 {
			q = rc.AAAA
		}
		if _, err := unix.Write(c.fd, q); err != nil {
			return n, fmt.Errorf("send query again: %w", os.NewSyscallError("write", err))
		}
		n++
	}
	return n, nil
}
