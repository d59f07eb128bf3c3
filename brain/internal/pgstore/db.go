package pgstore

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Defaults of Options.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultOpTimeout     = 10 * time.Second
	DefaultMaxConns      = 32
)

// applicationName is the application_name of the nodes' connections,
// unless the database URL sets one.
const applicationName = "brain"

// upkeepConns is the size of the pool that renews leases and membership:
// one connection for each, which run at once.
const upkeepConns = 2

// Options configures Open.
type Options struct {
	// URL is the database's connection string (postgres://…).
	URL string
	// SealingKey is the node's sealing key (required). Its fingerprint
	// is stored by the first node; a node with another key is refused
	// with ErrKeyMismatch.
	SealingKey []byte
	// NodeID names this node in the membership and lease rows (default: a
	// random id). A node restarted under the same id takes its leases
	// again with a new epoch.
	NodeID string
	// PublicURL is the URL other nodes reach this node at.
	PublicURL string
	// LeaseDuration is the length of session leases and of the
	// membership heartbeat (default DefaultLeaseDuration).
	LeaseDuration time.Duration
	// Fenced makes every journal append require a live lease held by this
	// node on the session (see AcquireLease); an append without one fails
	// with ErrNotOwner before reaching the database.
	Fenced bool
	// KeepLeases renews every lease this node holds each third of
	// LeaseDuration, and reports one it could not renew in time to the
	// function set by OnLeaseLost.
	KeepLeases bool
	// OpTimeout bounds every database operation (default
	// DefaultOpTimeout); an append that times out is ErrOutcomeUnknown.
	OpTimeout time.Duration
	// MaxConns bounds the connection pool (default DefaultMaxConns).
	// Besides it, a node holds a connection that listens for other
	// nodes' commits, one that notifies them of its own, and up to two
	// that renew its leases and membership.
	MaxConns int32
	// OnCommit, if set, is called after each committed transaction that
	// appended journal records, with how many it appended and how long
	// the transaction took from its send to its commit's answer (as
	// journal.Options.OnCommit). It must not block.
	OnCommit func(records int, d time.Duration)
	// OnDurable, if set, is called with each append's records once they
	// are committed, before the append returns (as
	// journal.Options.OnDurable): only the appends this node commits. The
	// records' Data belongs to the caller of Append: it must be copied to
	// be kept. It must not block.
	OnDurable func(session string, recs []journal.Record)
}

// DB is one node's handle on the cluster database: the journal, request
// claims, modules, membership and leases. Its methods are safe for
// concurrent use.
type DB struct {
	opts Options
	pool *pgxpool.Pool
	// send runs writes on pool, each taking its connection before it
	// sends anything (see sender).
	send sender
	// upkeep is a pool of its own for renewing leases and membership,
	// which requests waiting on the database never take from them.
	upkeep   *pgxpool.Pool
	instance string // random per Open: tells this process's claims apart
	journal  *Journal
	group    grouper   // group commit of one-statement writes
	reads    keyReader // grouped reads of idempotency keys

	leaseMu sync.Mutex
	leases  map[string]Lease // live leases this node holds
	lost    func(id string, epoch int64)

	// census is the last count of passivated sessions (Passivated).
	census struct {
		sync.Mutex
		n  int
		at time.Time
	}

	bg   context.Context // ends on Close: background work derives from it
	stop context.CancelFunc
	// ops ends as soon as Close begins: lease acquisitions in flight are
	// cancelled then (see cancelOnClose), so Close never waits for one.
	ops    context.Context
	endOps context.CancelFunc
	// joined: Open's heartbeat made this process a member.
	joined bool
	// wg counts the background work and the lease acquisitions in
	// flight, which start only while closing (guarded by bgMu) is false:
	// once Close began, nothing starts, and Close waits for what did.
	wg        sync.WaitGroup
	bgMu      sync.Mutex
	closing   bool
	closeOnce sync.Once
}

// Open connects to the database, migrates its schema, checks the sealing
// key's fingerprint, registers this node as a member and starts listening
// for commits made by other nodes.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if len(opts.SealingKey) < 16 {
		return nil, errors.New("pgstore: a sealing key of at least 16 bytes is required")
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.NodeID == "" {
		opts.NodeID = "node-" + randomHex(8)
	}
	cfg, err := parseURL(opts.URL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = opts.MaxConns
	// Every statement here looks rows up by key: one generic plan per
	// prepared statement serves all parameters, and saves planning the
	// append on every call.
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	// A transaction of this node never waits longer than OpTimeout
	// between its statements. One left idle longer belongs to a process
	// that stopped (SIGSTOP, a hung host) while holding its row locks: the
	// server ends it, so that the session rows it locked are not held
	// from every node for as long as its connection stays open.
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(max(opts.OpTimeout.Milliseconds(), 1), 10)
	}
	// A statement of this node waits for a row lock at most a quarter of
	// OpTimeout: the locks of a healthy node last one commit. A longer
	// wait is for a node stopped in the middle of a statement or batch
	// (which no server timeout ends, see reapStalled); the statement then
	// fails on the server, nothing of it committed (ErrUnavailable), and
	// the group commit's other writes go on without it.
	if _, set := cfg.ConnConfig.RuntimeParams["lock_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(opts.OpTimeout.Milliseconds()/4, 1), 10)
	}
	// The nodes' connections are told apart from others' by their
	// application name (see reapStalled).
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	// A connection that failed (a statement given up after its
	// connection stopped answering) is closed in the background, and its
	// place in the pool stays taken until that ends: up to 15 seconds
	// spent waiting for the server to close a connection that may never
	// answer again. Neither pool has a place to spare for that long (a
	// network that dropped every connection would leave requests waiting
	// for one, and renewals of leases and membership too), so such a
	// connection is closed at once, and the next statement opens a new
	// one.
	cfg.BeforeClose = func(c *pgx.Conn) {
		if c.IsClosed() {
			c.PgConn().Conn().Close()
		}
	}
	// The pool checks a connection idle for more than a second before
	// handing it out. One that does not answer that check within a
	// quarter of OpTimeout (as long as a healthy node's statement may
	// wait for a lock) died while it was idle: it is passed over for
	// another or a new one, rather than the request waiting on it until
	// its deadline and failing.
	cfg.PingTimeout = max(opts.OpTimeout/4, time.Millisecond)
	ucfg := cfg.Copy()
	ucfg.MaxConns, ucfg.MinConns = upkeepConns, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	upkeep, err := pgxpool.NewWithConfig(ctx, ucfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	db := &DB{opts: opts, pool: pool, send: sender{pool}, upkeep: upkeep, instance: randomHex(16), leases: map[string]Lease{}}
	db.ops, db.endOps = context.WithCancel(context.Background())
	db.group.db = db
	db.group.batches = batches[*groupOp]{inFlight: groupInFlight, max: groupMax, run: db.group.run,
		done: func(op *groupOp) bool { return closed(op.done) }}
	db.reads.db = db
	db.reads.batches = batches[*keyRead]{inFlight: readInFlight, max: readMax, run: db.reads.run,
		done: func(op *keyRead) bool { return closed(op.done) }}
	if err := db.start(ctx); err != nil {
		db.endOps()
		if db.joined {
			// The membership it joined is given up: other nodes would
			// otherwise count this node live, and a retry under its id
			// wait for the row to run out.
			lctx, cancel := context.WithTimeout(context.Background(), opts.OpTimeout)
			db.leave(lctx)
			cancel()
		}
		pool.Close()
		upkeep.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) start(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, 2*db.opts.OpTimeout)
	defer cancel()
	if err := migrate(octx, db.pool, migrations); err != nil {
		return err
	}
	if err := db.checkKey(octx); err != nil {
		return err
	}
	cancel()
	// Waiting for the membership of a process that stopped under this
	// node's id to run out may take up to a lease length.
	octx, cancel = context.WithTimeout(ctx, db.opts.LeaseDuration+2*db.opts.OpTimeout)
	err := db.join(octx)
	cancel()
	if err != nil {
		return err
	}
	db.joined = true
	octx, cancel = context.WithTimeout(ctx, 2*db.opts.OpTimeout)
	defer cancel()
	bg, stop := context.WithCancel(context.Background())
	db.bg, db.stop = bg, stop
	db.journal = newJournal(db)
	ready := make(chan struct{})
	db.wg.Go(func() { db.journal.listen(bg, ready) })
	db.wg.Go(func() { db.keepMembership(bg) })
	if db.opts.KeepLeases {
		db.wg.Go(func() { db.keepLeases(bg) })
	}
	db.wg.Go(func() { db.journal.notifier(bg) })
	db.wg.Go(func() { db.journal.poller(bg) })
	select {
	case <-ready:
		return nil
	case <-octx.Done():
		stop()
		db.wg.Wait()
		return fmt.Errorf("pgstore: listen for commits: %w: %w", ErrUnavailable, octx.Err())
	}
}

// keyFingerprint identifies a sealing key without revealing it.
func keyFingerprint(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("brain sealing key fingerprint v1"))
	return m.Sum(nil)
}

func (db *DB) checkKey(ctx context.Context) error {
	fp := keyFingerprint(db.opts.SealingKey)
	var stored []byte
	err := db.pool.QueryRow(ctx, `INSERT INTO brain_cluster (key_fingerprint) VALUES ($1)
		ON CONFLICT (singleton) DO UPDATE SET key_fingerprint = coalesce(brain_cluster.key_fingerprint, EXCLUDED.key_fingerprint)
		RETURNING key_fingerprint`, fp).Scan(&stored)
	if err != nil {
		return classify("check sealing key", err, true)
	}
	if !hmac.Equal(stored, fp) {
		return ErrKeyMismatch
	}
	return nil
}

// Journal answers the journal store backed by the database.
func (db *DB) Journal() *Journal { return db.journal }

// NodeID answers this node's id.
func (db *DB) NodeID() string { return db.opts.NodeID }

// Ping checks that the database answers (for readiness probes).
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.opts.OpTimeout)
	defer cancel()
	_, err := db.pool.Exec(ctx, "SELECT 1")
	return classify("ping", err, false)
}

// Close releases the leases still held, leaves the membership, stops
// listening, ends subscriptions and closes the pool. Releasing and
// leaving take at most OpTimeout each: leaving is not held up by
// releasing many leases, so other nodes stop forwarding to this one.
// Once Close began no background work starts and no lease is taken;
// Close waits for the work already under way, and has the lease
// acquisitions under way cancelled on the server (one waiting for a
// locked lease row would otherwise hold Close up to its lock_timeout),
// which then answer ErrUnavailable wrapping ErrClosed.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.bgMu.Lock()
		db.closing = true
		db.bgMu.Unlock()
		db.endOps()
		db.journal.Close()
		ctx, cancel := context.WithTimeout(context.Background(), db.opts.OpTimeout)
		db.releaseAll(ctx)
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), db.opts.OpTimeout)
		db.leave(ctx)
		cancel()
		db.stop()
		db.wg.Wait()
		db.pool.Close()
		db.upkeep.Close()
	})
	return nil
}

// enter counts work that must end before Close closes the pools in wg,
// unless Close began: it answers false then, and the work must not
// start. The caller calls wg.Done when it ends.
func (db *DB) enter() bool {
	db.bgMu.Lock()
	defer db.bgMu.Unlock()
	if db.closing {
		return false
	}
	db.wg.Add(1)
	return true
}

// goBackground runs f in the background, counted in wg, unless Close
// began: it answers false then, and f does not run.
func (db *DB) goBackground(f func()) bool {
	if !db.enter() {
		return false
	}
	go func() {
		defer db.wg.Done()
		f()
	}()
	return true
}

// isClosing reports whether Close began.
func (db *DB) isClosing() bool {
	db.bgMu.Lock()
	defer db.bgMu.Unlock()
	return db.closing
}

func (db *DB) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, db.opts.OpTimeout)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
