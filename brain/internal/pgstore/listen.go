package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen holds one connection LISTENing to the journal channel and hands
// each notification to the journal, until ctx ends. After the connection
// is lost it reconnects (with a growing pause) and catches every followed
// session up from the journal, since notifications sent meanwhile are
// lost. The notification is only a wake-up: what is pushed is always read
// from the journal.
// ready is closed once the first LISTEN is in place.
func (j *Journal) listen(ctx context.Context, ready chan<- struct{}) {
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := j.listenOnce(ctx, &ready)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			pause = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

func (j *Journal) listenOnce(ctx context.Context, ready *chan<- struct{}) error {
	cfg := j.db.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	if *ready != nil {
		close(*ready)
		*ready = nil
	} else {
		j.catchUpAll(ctx)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		j.notified(n.Payload)
	}
}
