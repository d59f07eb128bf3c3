package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// listen holds one connection LISTENing to the journal channel and hands
// each notification to the journal, until ctx ends. After the connection
// is lost it reconnects and catches every followed session up from the
// journal, since notifications sent meanwhile are lost. The pause before
// a reconnection grows while connecting or LISTEN fails, and is short
// again once a LISTEN was in place. The notification is only a wake-up:
// what is pushed is always read from the journal. A connection that
// brought nothing for a third of the lease length is pinged, and one that
// does not answer within a quarter of OpTimeout is replaced: it died
// without a word. A LISTEN not answered within OpTimeout is given up.
// ready is closed once the first LISTEN is in place.
func (j *Journal) listen(ctx context.Context, ready chan<- struct{}) {
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		if j.listenOnce(ctx, &ready) {
			pause = 50 * time.Millisecond
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// listenOnce listens on one new connection until it fails or ctx ends,
// and answers whether its LISTEN was in place.
func (j *Journal) listenOnce(ctx context.Context, ready *chan<- struct{}) (listened bool) {
	cfg := j.db.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The LISTEN is bounded as any statement: a connection that the
	// network dropped without a word right after it connected would
	// otherwise hold the listener in it for good, leaving other nodes'
	// commits to the polls.
	lctx, cancel := j.db.opCtx(ctx)
	_, err = conn.Exec(lctx, "LISTEN "+notifyChannel)
	cancel()
	if err != nil {
		return false
	}
	if *ready != nil {
		close(*ready)
		*ready = nil
	} else {
		j.catchUpAll(ctx)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, j.db.opts.LeaseDuration/3)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			j.notified(n.Payload)
			continue
		}
		if ctx.Err() != nil || !pgconn.Timeout(err) {
			return true
		}
		// Nothing came for a third of the lease length: the connection
		// may have died without a word (a network that dropped it sends
		// no reset), and would then wait for notifications that never
		// come. One that does not answer a ping as soon as a healthy
		// node's statement would is given up for a new one.
		pctx, cancel := context.WithTimeout(ctx, max(j.db.opts.OpTimeout/4, time.Millisecond))
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return true
		}
	}
}

// pollInterval is how often followed sessions are checked against the
// journal, in case a wake-up was never sent (the committing node died
// between its commit and its NOTIFY).
const pollInterval = time.Second

// notifyLater queues a wake-up for other nodes' subscribers of session.
func (j *Journal) notifyLater(session string, last uint64) {
	j.notifyMu.Lock()
	if last > j.toNotify[session] {
		j.toNotify[session] = last
	}
	j.notifyMu.Unlock()
	select {
	case j.notifyCh <- struct{}{}:
	default:
	}
}

// notifier sends the queued wake-ups, many per statement, until ctx ends,
// on a connection of its own so that it never holds up an append. The
// statement commits with synchronous_commit off: a notification is
// delivered at commit and is worthless after a crash, so its transaction
// need not wait for a WAL flush. A failed send is dropped (followers
// poll) and the connection is opened again for the next one.
func (j *Journal) notifier(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-j.notifyCh:
		}
		j.notifyMu.Lock()
		batch := j.toNotify
		j.toNotify = map[string]uint64{}
		j.notifyMu.Unlock()
		payloads := make([]string, 0, len(batch))
		for s, last := range batch {
			payloads = append(payloads, wakePayload(s, last))
		}
		octx, cancel := j.db.opCtx(ctx)
		var err error
		if conn == nil {
			conn, err = pgx.ConnectConfig(octx, j.db.pool.Config().ConnConfig.Copy())
		}
		if err == nil {
			// Notifications queue behind other commits' (PostgreSQL's lock
			// on the queue, held from a commit's notifying to its end): the
			// wait is bounded by octx, not lock_timeout.
			_, err = conn.Exec(octx, `SELECT set_config('synchronous_commit', 'off', true), set_config('lock_timeout', '0', true),
				(SELECT count(*) FROM (SELECT pg_notify('`+notifyChannel+`', p) FROM unnest($1::text[]) p) n)`, payloads)
			if err != nil {
				conn.Close(octx)
			}
		}
		if err != nil {
			conn = nil
		}
		cancel()
	}
}

// poller catches followed sessions up every pollInterval, until ctx ends,
// and ends the subscriptions of followed sessions that were deleted.
func (j *Journal) poller(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j.mu.Lock()
		ids := make([][]byte, 0, len(j.feeds))
		followed := make(map[string]*sessionFeeds, len(j.feeds))
		for id, sf := range j.feeds {
			ids = append(ids, []byte(id))
			followed[id] = sf
		}
		j.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		// Sessions whose records were pushed before the heads are read:
		// their rows existed, so a missing row means a delete whose
		// wake-up was lost.
		seen := make(map[string]bool, len(followed))
		for id, sf := range followed {
			sf.mu.Lock()
			seen[id] = sf.pushed > 0
			sf.mu.Unlock()
		}
		octx, cancel := j.db.opCtx(ctx)
		rows, err := j.db.pool.Query(octx, `SELECT session_id, next_seq FROM brain_sessions WHERE session_id = ANY($1)`, ids)
		type head struct {
			id   []byte
			next int64
		}
		var heads []head
		if err == nil {
			heads, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (head, error) {
				var h head
				err := r.Scan(&h.id, &h.next)
				return h, err
			})
		}
		cancel()
		if err != nil {
			continue
		}
		for _, h := range heads {
			delete(seen, string(h.id))
		}
		for id, pushed := range seen {
			if pushed && j.feedsOf(id) == followed[id] {
				j.deleted(id)
			}
		}
		for _, h := range heads {
			sf := j.feedsOf(string(h.id))
			if sf == nil {
				continue
			}
			sf.mu.Lock()
			if uint64(h.next-1) > sf.pushed {
				j.catchUp(ctx, string(h.id), sf, uint64(h.next-1))
			}
			sf.mu.Unlock()
		}
	}
}
