package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// crossNodeFeed opens node a through a proxy (proxy) and node b directly,
// subscribes on a to a session b appends to, and answers deliver, which
// appends one record on b and answers how long it took to reach a's
// subscriber.
func crossNodeFeed(t *testing.T, lease time.Duration) (proxy *silentProxy, deliver func() time.Duration) {
	t.Helper()
	direct := pgtest.Database(t)
	proxy, url := newSilentProxy(t, direct)
	a := openDB(t, url, func(o *pgstore.Options) { o.LeaseDuration, o.OpTimeout = lease, 2*time.Second })
	b := openDB(t, direct, nil)
	ctx := context.Background()
	if err := b.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Journal().Subscribe(ctx, "s", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	next := uint64(2)
	deliver = func() time.Duration {
		t.Helper()
		start := time.Now()
		if err := b.Journal().Append(ctx, "s", next, []journal.Record{rec("k", int(next))}); err != nil {
			t.Fatal(err)
		}
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := sub.Next(nctx)
		if err != nil || r.Sequence != next {
			t.Fatalf("Next = %d, %v; want %d", r.Sequence, err, next)
		}
		next++
		return time.Since(start)
	}
	deliver()
	return proxy, deliver
}

// deliversAtOnceAgain fails t unless, within wait, a record committed on
// the other node reaches the subscriber within fast, and so do the five
// after it. what names the fault the feed had to get over.
func deliversAtOnceAgain(t *testing.T, deliver func() time.Duration, wait time.Duration, what string) {
	t.Helper()
	const fast = 250 * time.Millisecond
	var d time.Duration
	for end := time.Now().Add(wait); time.Now().Before(end); {
		if d = deliver(); d <= fast {
			break
		}
	}
	if d > fast {
		t.Fatalf("%v after %s, a record committed on another node still took %v to reach the subscriber", wait, what, d.Round(time.Millisecond))
	}
	for range 5 {
		if d := deliver(); d > fast {
			t.Fatalf("a record committed on another node took %v to reach the subscriber", d.Round(time.Millisecond))
		}
	}
}

// TestSilentlyDeadListenerIsReplaced: the connection on which a node
// listens for other nodes' commits stops answering without being closed
// (a network that dropped it without a reset). Within a few lease
// lengths the node listens again on a new connection, so that what
// another node commits reaches its subscribers at once again, not at
// the next poll of the journal.
func TestSilentlyDeadListenerIsReplaced(t *testing.T) {
	const lease = 3 * time.Second
	proxy, deliver := crossNodeFeed(t, lease)
	proxy.Silence()
	// Until the node notices, records come at the polls of the journal,
	// a second apart; then at once again, each of them.
	deliversAtOnceAgain(t, deliver, 3*lease, "the listening connection died")
}

// TestListenLostOnItsWayIsGivenUp: the network drops a new listening
// connection right after it connected, so that its LISTEN never gets an
// answer (nor a reset). The node gives that LISTEN up like any other
// statement and listens on another connection, so that what another
// node commits reaches its subscribers at once again, not only at the
// polls of the journal, for as long as the dead connection stays open.
func TestListenLostOnItsWayIsGivenUp(t *testing.T) {
	const lease = 3 * time.Second
	proxy, deliver := crossNodeFeed(t, lease)

	// The listening connection dies without a word; the next one's
	// LISTEN is lost on its way, and the network is sound again after.
	proxy.dropListen.Store(true)
	proxy.Silence()
	for end := time.Now().Add(3 * lease); proxy.listensDropped.Load() == 0; {
		if time.Now().After(end) {
			t.Fatal("the node did not listen again on a new connection")
		}
		time.Sleep(20 * time.Millisecond)
	}
	proxy.dropListen.Store(false)

	deliversAtOnceAgain(t, deliver, 3*lease, "a LISTEN was lost")
}
