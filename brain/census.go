package brain

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// storedEvery bounds how often the file backend lists its sessions
// directory for brain_sessions_passivated: a count younger than it is
// answered again without a listing, as the PostgreSQL backend keeps its
// count (pgstore.PassivatedEvery).
const storedEvery = 5 * time.Second

// storedCensus counts the sessions stored on disk for the
// brain_sessions_passivated gauge. Frequent scrapes cost at most one
// listing of the sessions directory per every; scrapes at once share
// one. A session created or deleted since the last listing shows in the
// gauge once the count is renewed. When the directory cannot be listed,
// the last count is answered and the failure is logged once, until a
// listing succeeds again.
type storedCensus struct {
	list  func(ctx context.Context) ([]string, error)
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	n        int
	at       time.Time // when n was counted, or the listing last failed
	failing  bool      // the last listing failed (and was logged)
	listings int       // listings made
}

// count answers the number of sessions stored, counted at most every
// c.every ago.
func (c *storedCensus) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.every {
		return c.n
	}
	c.listings++
	ids, err := c.list(context.Background())
	c.at = time.Now()
	if err != nil {
		if !c.failing {
			c.failing = true
			c.log.Error("listing the stored sessions; brain_sessions_passivated keeps the last count", "err", err, "count", c.n)
		}
		return c.n
	}
	if c.failing {
		c.failing = false
		c.log.Info("listing the stored sessions again", "count", len(ids))
	}
	c.n = len(ids)
	return c.n
}
