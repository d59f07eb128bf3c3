'use strict';

// The Brain session inspector. It reads the session API of its own origin
// with the operator token in the Authorization header; the token lives in
// sessionStorage and never in a URL.

const TOKEN_KEY = 'brain.inspector.token';
const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function authHeaders(extra) {
  const h = Object.assign({}, extra);
  const t = token();
  if (t) h['Authorization'] = 'Bearer ' + t;
  return h;
}

function newKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'ui-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.code + ': ' + body.message : 'HTTP ' + status);
    this.status = status;
    this.code = body && body.code;
  }
}

// A read (a GET) not answered in full within READ_TIMEOUT_MS is given up
// and fails, so that a read that hangs is reported and can be tried
// again rather than wait for ever. Actions are not given up: their answer
// says whether they were taken. A read made with opts.signal is given up
// as well when the signal aborts (its view has been left).
const READ_TIMEOUT_MS = 30000;

async function api(method, path, opts) {
  opts = opts || {};
  const headers = authHeaders(opts.headers);
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const ctl = new AbortController();
  let timedOut = false;
  const timer = method === 'GET' ? setTimeout(() => { timedOut = true; ctl.abort(); }, READ_TIMEOUT_MS) : null;
  const signal = opts.signal ? AbortSignal.any([ctl.signal, opts.signal]) : ctl.signal;
  try {
    const r = await fetch(path, { method, headers, body, cache: 'no-store', signal });
    if (r.status === 401) {
      forget('The token was refused.');
      throw new ApiError(401, { code: 'unauthorized', message: 'a valid bearer token is required' });
    }
    if (!r.ok) {
      let e = null;
      try { e = await r.json(); } catch (_) { /* not an ApiError body */ }
      throw new ApiError(r.status, e);
    }
    if (r.status === 204) return null;
    const text = await r.text();
    return text ? JSON.parse(text) : null;
  } catch (e) {
    if (timedOut && !(e instanceof ApiError)) {
      throw new Error('no answer within ' + READ_TIMEOUT_MS / 1000 + ' s');
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

function short(v, n) {
  let s = typeof v === 'string' ? v : JSON.stringify(v);
  if (s === undefined) s = '';
  n = n || 160;
  return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
}

function fmtTime(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// recordedAt shows when a record was recorded: its date and time in the
// browser's time zone (the records of a session that runs for days are
// not told apart by their time of day alone), titled with the time in
// UTC.
function recordedAt(ms) {
  const d = new Date(ms);
  const two = (n) => String(n).padStart(2, '0');
  const t = el('time', null, d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' +
    two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds()) + '.' + String(d.getMilliseconds()).padStart(3, '0'));
  t.dateTime = d.toISOString();
  t.title = d.toISOString() + ' (UTC)';
  return t;
}

function originText(o) {
  if (!o) return 'brain';
  if (o.kind === 'environment' && o.environment) return 'environment ' + o.environment.name + ' #' + o.environment.sequence;
  return o.kind + ' #' + o.sequence;
}

// ---------------------------------------------------------------- views

let view = null; // the open view; stop() releases it

// The message box holds a draft per session: the text typed for one
// session is kept when the page leaves it and shows again when it is
// opened again, never in another session's box. The answer to an action
// sent to a session shows on that session: one that comes once the page
// has left it does not change what another session shows, and its error
// shows when the session is opened again.
const drafts = new Map(); // session id -> the text in its message box
const sending = new Set(); // sessions whose message is being sent
const missed = new Map(); // session id -> the error of an action answered while it did not show
// A message whose outcome is unknown (no answer came, or a 5xx) keeps its
// Idempotency-Key: the same text sent again to the same session is the
// same request, which Brain answers without running it twice. An answer
// that says (2xx, 4xx) lets the key go.
const unsettled = new Map(); // session id -> { text, key }

// shows reports whether the view of session id is open.
function shows(id) { return view instanceof SessionView && view.id === id; }

function show(id) {
  for (const s of ['login', 'list', 'session']) $(s).hidden = s !== id;
  // A Brain that serves without a token leaves none to forget.
  $('forget').hidden = !token();
}

function forget(why) {
  const none = token() === '';
  sessionStorage.removeItem(TOKEN_KEY);
  if (view) view.stop();
  view = null;
  // Brain served without a token before, and asks for one now.
  if (none && why) why = 'This Brain now asks for its operator token.';
  $('login-error').textContent = why || '';
  show('login');
  $('token').focus();
}

// needsNoToken asks Brain for its sessions without a token: a Brain that
// serves without authentication (on a loopback address) answers, and
// then the page needs no token and shows the sessions at once. A Brain
// that needs one refuses, and the page asks the operator for it.
async function needsNoToken() {
  let open = false;
  try {
    const r = await fetch('/v1/sessions', { cache: 'no-store', signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
    open = r.ok;
  } catch (_) { /* asked for a token, as before */ }
  if (open && token() === null && view === null) {
    sessionStorage.setItem(TOKEN_KEY, '');
    route();
  }
}

function route() {
  if (view) view.stop();
  view = null;
  if (token() === null) {
    show('login');
    needsNoToken();
    return;
  }
  const m = location.hash.match(/^#\/s\/([A-Za-z0-9_]+)$/);
  view = m ? new SessionView(m[1]) : new ListView();
}

// ---------------------------------------------------------------- list

class ListView {
  constructor() {
    show('list');
    this.timer = null;
    this.stopped = false;
    this.left = new AbortController(); // aborts the read under way once the view stops
    this.refresh();
  }
  stop() { this.stopped = true; this.left.abort(); clearTimeout(this.timer); }
  async refresh() {
    try {
      const list = await api('GET', '/v1/sessions', { signal: this.left.signal });
      if (this.stopped) return;
      this.render(list.sessions || []);
      $('list-error').textContent = '';
    } catch (e) {
      if (!this.stopped) $('list-error').textContent = e.message;
    }
    if (!this.stopped) this.timer = setTimeout(() => this.refresh(), 2000);
  }
  // render updates the rows in place, so that a refresh keeps the focus
  // (and a screen reader's place) on the link it was on.
  render(sessions) {
    const tbody = $('sessions').tBodies[0];
    const rows = new Map();
    for (const tr of tbody.rows) rows.set(tr.dataset.session, tr);
    let at = tbody.firstElementChild;
    for (const s of sessions) {
      let tr = rows.get(s.session_id);
      rows.delete(s.session_id);
      if (!tr) {
        tr = el('tr');
        tr.dataset.session = s.session_id;
        const a = el('a', 'mono', s.session_id);
        a.href = '#/s/' + s.session_id;
        const td = el('td');
        td.append(a);
        const st = el('td');
        st.append(el('span', 'badge'));
        tr.append(td, st, el('td', 'mono'));
      }
      const badge = tr.cells[1].firstElementChild;
      if (badge.textContent !== s.status) {
        badge.textContent = s.status;
        badge.className = 'badge ' + s.status;
      }
      const last = String(s.last_sequence);
      if (tr.cells[2].textContent !== last) tr.cells[2].textContent = last;
      if (tr !== at) tbody.insertBefore(tr, at);
      else at = at.nextElementSibling;
    }
    for (const tr of rows.values()) tr.remove();
    $('no-sessions').hidden = sessions.length > 0;
  }
}

// ---------------------------------------------------------------- session

// Families whose *_started record opens an entry that a *_ended or
// *_failed record naming its sequence closes.
const depthOf = {
  session_creation: 0, session_end: 0, turn: 0, activation: 1,
  model_call: 2, tool_call: 2, tool_cancel: 2,
};

// The timeline and the events table show a window of a session's events:
// a session opens at its newest PAGE events, and while it follows new
// ones the window holds at most MAX_SHOWN; older and newer pages are read
// from the events API on demand.
const PAGE = 500;
const MAX_SHOWN = 1000;

// A stream that has sent nothing, not even a heartbeat comment, for
// SILENT_BEATS heartbeat intervals is taken for dead (a proxy may drop a
// connection without closing it) and opened again from the cursor. The
// server names its interval in the Brain-Heartbeat-Ms header.
const DEFAULT_HEARTBEAT_MS = 15000;
const SILENT_BEATS = 3;

// The live state of model calls still running is kept apart from the
// window, so that a call's row shows all its streamed text when it is
// shown again (after paging back to the newest events). At most
// LIVE_CALLS calls are kept, each with at most LIVE_TEXT characters.
const LIVE_CALLS = 16;
const LIVE_TEXT = 1 << 20;

// Streamed text is written to the page once per animation frame, in parts
// of about STREAM_PART characters: blocks of their own, each ended after a
// line break where the text has one (so that the text shows as one) and
// else at STREAM_LINE characters, so that the browser lays out again only
// the last part as text arrives, not all the text streamed so far. In the
// last part a delta is appended to the last text node while that is
// shorter than STREAM_NODE characters, else in a node of its own, so that
// appending it costs in proportion to the delta.
const STREAM_PART = 4096;
const STREAM_LINE = 4 * STREAM_PART;
const STREAM_NODE = 1024;

// Records the environments table is folded from.
const envKinds = /^(session_creation_started$|tool_call_started$|environment_)/;

// Of the records a session streams before its environments are folded
// from the earlier ones, at most ENV_HELD are held; past that they are
// let go and read from the events API with the earlier ones instead.
const ENV_HELD = 1000;

// The transcript tab shows the newest TRANSCRIPT_PAGE messages, and
// TRANSCRIPT_PAGE earlier ones more each time the operator asks, so that
// showing the transcript again as a long session runs costs in
// proportion to what shows, not to the length of the transcript: only
// the messages that show are read, in parts of at most TRANSCRIPT_PART
// (the most the transcript API answers at once).
const TRANSCRIPT_PAGE = 200;
const TRANSCRIPT_PART = 1000;

// A block of the transcript shows at most TRANSCRIPT_TEXT characters of
// its text until the operator asks for all of it.
const TRANSCRIPT_TEXT = 1 << 16;

// A failed read of the summary the stream starts from is tried again
// after RETRY_MS, the wait doubling up to RETRY_MAX_MS.
const RETRY_MS = 500;
const RETRY_MAX_MS = 8000;

// The status, the transcript and the pager are shown again at most
// SOON_MS after a record that changes them arrives, with at most REREADS
// reads of each under way at once.
const SOON_MS = 150;
const REREADS = 2;

// transcriptShown reports whether the transcript tab shows.
function transcriptShown() { return !$('tab-transcript').hidden; }

class SessionView {
  constructor(id) {
    this.id = id;
    this.stopped = false;
    this.finished = false;
    this.gone = false; // the session does not exist
    this.last = 0; // the stream's cursor: the last sequence received
    this.lo = 1; // the window shown: sequences lo..hi
    this.hi = 0;
    this.following = true; // the window ends at the newest event
    this.loads = 0; // window loads started; a later one supersedes
    this.pending = null; // events received while the newest window loads
    this.entries = new Map(); // started sequence -> entry, in sequence order
    this.openTurn = null;
    this.openActivation = null;
    this.endEntry = null;
    this.early = []; // live frames that arrived before their model call
    this.liveCalls = new Map(); // running model call's sequence -> {text, detail}
    this.unwritten = new Set(); // entries with streamed text not yet written
    this.writeFrame = 0; // the animation frame requested to write it
    this.envs = new Map(); // name -> environment row model
    this.envStarts = new Map(); // environment_*_started sequence -> environment name
    this.envFrom = 0; // the environments are folded from the records after this
    this.envQueue = []; // records to fold once the ones before envFrom are
    this.envScan = null;
    this.heartbeatMs = DEFAULT_HEARTBEAT_MS;
    this.attempt = null; // the AbortController of the open stream
    this.left = new AbortController(); // aborts the reads under way once the view stops
    this.summaryTimer = null;
    this.transcriptTimer = null;
    this.transcriptShows = TRANSCRIPT_PAGE; // the newest messages the transcript tab shows
    // The blocks of the transcript the operator asked to see whole, by
    // place ("message/block"), with the text then shown: they show whole
    // again when the transcript is shown again with the same text there.
    this.wholeBlocks = new Map();
    // Reads of the summary and of the transcript are numbered as they
    // are sent; an answer older than the one shown (a slow request that
    // a later one overtook) is not shown over it.
    this.reads = { summary: 0, transcript: 0 };
    this.shown = { summary: 0, transcript: 0 };
    // The error a failed read of each shows, until a later read succeeds.
    this.readErrors = { summary: null, transcript: null, events: null, environments: null };
    // The wait before the status or the transcript is read again after
    // reads of it that failed.
    this.waits = { summary: 0, transcript: 0 };
    this.retryTimer = null;
    this.pagerTimer = null;
    // Whether a record has asked for a read of each (or for the pager)
    // that is not done yet.
    this.soon = { summary: false, transcript: false, pager: false };
    // The reads of each under way, and whether a record asked for
    // another while REREADS were.
    this.busy = { summary: 0, transcript: 0 };
    this.dirty = { summary: false, transcript: false };
    show('session');
    $('sid').textContent = id;
    $('status').textContent = '';
    $('status').className = 'badge';
    $('timeline').replaceChildren();
    $('events').tBodies[0].replaceChildren();
    $('environments').tBodies[0].replaceChildren();
    $('environments-status').textContent = '';
    $('transcript').replaceChildren();
    $('transcript-through').textContent = '';
    $('transcript-earlier').hidden = true;
    $('action-error').textContent = missed.get(id) || '';
    missed.delete(id);
    $('message').value = drafts.get(id) || '';
    $('send').disabled = sending.has(id);
    $('stream-note').textContent = '';
    $('pager').hidden = true;
    this.setLive('connecting');
    this.begin();
  }

  stop() {
    this.stopped = true;
    const draft = $('message').value;
    if (draft) drafts.set(this.id, draft);
    else drafts.delete(this.id);
    // The reads of a session left do not hold connections the next one
    // needs.
    this.left.abort();
    if (this.attempt) this.attempt.abort();
    cancelAnimationFrame(this.writeFrame);
    clearTimeout(this.summaryTimer);
    clearTimeout(this.transcriptTimer);
    clearTimeout(this.pagerTimer);
    clearTimeout(this.retryTimer);
  }

  // begin starts the stream at the newest page of the session, which its
  // summary names: a summary read that fails is tried again (after
  // RETRY_MS, doubling up to RETRY_MAX_MS), so that the stream does not
  // start from the session's first event.
  async begin() {
    let s = await this.summary(false);
    for (let wait = RETRY_MS; !s; wait = Math.min(2 * wait, RETRY_MAX_MS)) {
      if (this.stopped || this.gone) return;
      await new Promise((res) => { this.retryTimer = setTimeout(res, wait); });
      s = await this.summary(false);
    }
    if (this.stopped || this.gone) return;
    const start = s.last_sequence > PAGE ? s.last_sequence - PAGE : 0;
    this.last = start;
    this.lo = start + 1;
    this.hi = start;
    this.envFrom = start;
    this.pager();
    // The tab selected when the page left the session before shows now.
    if (transcriptShown()) this.transcript();
    if (!$('tab-environments').hidden) this.environmentsShown();
    this.follow();
  }

  setLive(state) {
    if (this.gone && state !== 'not found') return;
    const l = $('live');
    l.className = 'live' + (state === 'following' ? ' on' : '');
    l.textContent = state;
    l.dataset.state = state;
  }

  // fresh reports whether the answer to read n of what is newer than the
  // one shown, and then counts it as shown.
  fresh(what, n) {
    if (n < this.shown[what]) return false;
    this.shown[what] = n;
    return true;
  }

  // readFailed shows the error of a failed read of what; readDone, once a
  // later read of it succeeds, takes that error away unless another shows
  // in its place.
  readFailed(what, message) {
    const text = (what === 'summary' ? 'status' : what) + ': ' + message;
    this.readErrors[what] = text;
    $('action-error').textContent = text;
  }

  readDone(what) {
    const text = this.readErrors[what];
    if (text === null) return;
    this.readErrors[what] = null;
    if ($('action-error').textContent === text) $('action-error').textContent = '';
  }

  // again reads the status or the transcript again after a read of it
  // failed: after RETRY_MS, the wait doubling up to RETRY_MAX_MS while
  // reads fail, so that what shows does not stay stale when no record
  // comes to read it again. A record that asks for a read first takes
  // its place, and one that has asked for a read leaves none to add. The
  // transcript is read again only while its tab shows.
  again(what) {
    if (this.gone || this.soon[what]) return;
    const wait = this.waits[what] = this.waits[what] ? Math.min(2 * this.waits[what], RETRY_MAX_MS) : RETRY_MS;
    const key = what + 'Timer';
    clearTimeout(this[key]);
    this[key] = setTimeout(() => {
      if (what !== 'transcript' || transcriptShown()) this.reread(what);
    }, wait);
  }

  // summary reads the session's status and shows it; unless retry is
  // false, a read that fails is tried again.
  async summary(retry = true) {
    const n = ++this.reads.summary;
    try {
      const s = await api('GET', '/v1/sessions/' + this.id, { signal: this.left.signal });
      if (this.stopped) return null;
      if (!this.fresh('summary', n)) return s;
      this.waits.summary = 0;
      this.readDone('summary');
      const b = $('status');
      b.textContent = s.status;
      b.className = 'badge ' + s.status;
      b.dataset.lastSequence = s.last_sequence;
      return s;
    } catch (e) {
      if (this.stopped) return null;
      if (e.status === 404 || e.status === 400) this.missing();
      else if (this.fresh('summary', n)) {
        this.readFailed('summary', e.message);
        if (retry) this.again('summary');
      }
      return null;
    }
  }

  // missing stops following a session that does not exist (or no longer
  // does) and says so: there is nothing to reconnect to.
  missing() {
    if (this.stopped || this.gone) return;
    this.gone = true;
    this.finished = true;
    if (this.attempt) this.attempt.abort();
    clearTimeout(this.summaryTimer);
    clearTimeout(this.transcriptTimer);
    clearTimeout(this.pagerTimer);
    this.setLive('not found');
    $('status').textContent = '';
    $('status').className = 'badge';
    $('action-error').textContent = 'Session ' + this.id + ' does not exist (it may have been deleted).';
  }

  // later reads the status or the transcript again, or shows the pager
  // again, SOON_MS after a record asks for it. The records that ask
  // meanwhile are served by the same read rather than put it off, so
  // that while records stream steadily what shows keeps up with them.
  later(what) {
    if (this.soon[what]) return;
    const key = what + 'Timer';
    clearTimeout(this[key]);
    this.soon[what] = true;
    this[key] = setTimeout(() => {
      this.soon[what] = false;
      this.reread(what);
    }, SOON_MS);
  }

  // reread reads the status or the transcript again, or shows the pager
  // again. At most REREADS reads of the same are under way at once (one
  // that is slow does not hold back the next); past that it is read again
  // once one of them is over, so that a server slow to answer is not
  // sent a read for every few records, nor the page's connections taken
  // up by them.
  async reread(what) {
    if (what === 'pager') {
      this.pager();
      return;
    }
    if (what === 'transcript' && !transcriptShown()) return;
    if (this.busy[what] >= REREADS) {
      this.dirty[what] = true;
      return;
    }
    this.busy[what]++;
    try {
      await this[what]();
    } finally {
      this.busy[what]--;
    }
    if (this.dirty[what] && !this.stopped && !this.gone) {
      this.dirty[what] = false;
      this.later(what);
    }
  }

  async transcript() {
    const n = ++this.reads.transcript;
    try {
      const t = await this.readTranscript(this.transcriptShows);
      if (this.stopped || !this.fresh('transcript', n)) return;
      this.waits.transcript = 0;
      this.readDone('transcript');
      if (t === null) {
        // The transcript changed between the parts read: read it again.
        this.later('transcript');
        return;
      }
      renderTranscript(t, this.wholeBlocks);
    } catch (e) {
      if (this.stopped || this.gone || e.status === 404 || e.status === 400) return;
      if (this.fresh('transcript', n)) {
        this.readFailed('transcript', e.message);
        this.again('transcript');
      }
    }
  }

  // readTranscript reads the newest count messages of the transcript:
  // the newest TRANSCRIPT_PART of them with ?tail, which says how many
  // the transcript holds, then the earlier ones with ?from&limit, a part
  // at a time. It answers them as a transcript part (messages, total,
  // offset, through_sequence), or null when the transcript's length
  // changed between the parts.
  async readTranscript(count) {
    const base = '/v1/sessions/' + this.id + '/transcript?';
    const opts = { signal: this.left.signal };
    const newest = await api('GET', base + 'tail=' + Math.min(count, TRANSCRIPT_PART), opts);
    const from = Math.max(0, newest.total - count);
    if (from >= newest.offset) return newest;
    const messages = [];
    for (let at = from; at < newest.offset; at += TRANSCRIPT_PART) {
      const p = await api('GET', base + 'from=' + at + '&limit=' + Math.min(TRANSCRIPT_PART, newest.offset - at), opts);
      if (this.stopped || p.total !== newest.total) return null;
      messages.push(...p.messages);
    }
    messages.push(...newest.messages);
    return { messages, total: newest.total, offset: from, through_sequence: newest.through_sequence };
  }

  // earlierMessages reads and shows TRANSCRIPT_PAGE more of the
  // transcript's earlier messages.
  earlierMessages() {
    this.transcriptShows += TRANSCRIPT_PAGE;
    this.transcript();
  }

  // follow reads the events stream with fetch (EventSource cannot send
  // the Authorization header) and reconnects after the last sequence
  // until the session has ended: when the stream ends, fails, or stays
  // silent for SILENT_BEATS heartbeats.
  async follow() {
    let silentSince = 0;
    let failed = null; // the error shown for the attempts that failed, and since when
    while (!this.stopped && !this.finished) {
      const ctl = new AbortController();
      this.attempt = ctl;
      let silent = false;
      let timer = null;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => { silent = true; ctl.abort(); }, SILENT_BEATS * this.heartbeatMs);
      };
      try {
        arm();
        const r = await fetch('/v1/sessions/' + this.id + '/events?after=' + this.last, {
          headers: authHeaders({ Accept: 'text/event-stream' }),
          signal: ctl.signal,
          cache: 'no-store',
        });
        if (r.status === 401) { forget('The token was refused.'); return; }
        // A session that does not exist, or an id no session can have.
        if (r.status === 404 || r.status === 400) { this.missing(); return; }
        if (!r.ok) {
          let e = null;
          try { e = await r.json(); } catch (_) { /* not an ApiError */ }
          throw new ApiError(r.status, e);
        }
        const hb = parseInt(r.headers.get('Brain-Heartbeat-Ms'), 10);
        if (hb > 0) this.heartbeatMs = hb;
        arm();
        this.setLive('following');
        if (silentSince) {
          $('stream-note').textContent = 'The event stream went silent at ' + fmtTime(silentSince) +
            '; reconnected at ' + fmtTime(Date.now()) + ' after #' + this.last + '.';
          silentSince = 0;
        }
        if (failed) {
          // The error of the failed attempts is over: say so, and leave
          // an error shown since in place.
          if ($('action-error').textContent === failed.text) $('action-error').textContent = '';
          $('stream-note').textContent = 'The event stream failed at ' + fmtTime(failed.since) + ' (' + failed.text +
            '); reconnected at ' + fmtTime(Date.now()) + ' after #' + this.last + '.';
          failed = null;
        }
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        const frames = new FrameSplitter();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          arm();
          for (const frame of frames.push(value)) this.frame(frame);
          arm();
        }
      } catch (e) {
        if (this.stopped || this.gone) return;
        if (!silent) {
          const text = 'event stream: ' + e.message;
          failed = { text, since: failed ? failed.since : Date.now() };
          $('action-error').textContent = text;
        }
      } finally {
        clearTimeout(timer);
      }
      if (this.stopped) return;
      if (this.finished) break;
      this.setLive('reconnecting');
      if (silent) {
        if (!silentSince) silentSince = Date.now() - SILENT_BEATS * this.heartbeatMs;
        $('stream-note').textContent = 'The event stream has been silent since ' + fmtTime(silentSince) +
          '; reconnecting after #' + this.last + '.';
        continue;
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
    if (!this.stopped) this.setLive('ended');
  }

  frame(text) {
    let id = null;
    let type = 'message';
    const data = [];
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? '' : line.slice(c + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') id = value;
      else if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    let payload;
    try { payload = JSON.parse(data.join('\n')); } catch (_) { return; }
    if (id !== null) {
      if (payload.sequence <= this.last) return;
      this.last = payload.sequence;
      this.record(payload);
    } else {
      this.live(type, payload);
    }
  }

  // live handles a live-only frame: streamed model output and its usage.
  live(type, p) {
    const seq = p.model_call_sequence;
    if (seq > this.last) {
      // A live frame may overtake the committed record of its model call;
      // keep it until the call's row exists.
      if (this.early.length < 10000) this.early.push([type, p]);
      return;
    }
    let state = this.liveCalls.get(seq);
    if (!state) {
      if (this.liveCalls.size >= LIVE_CALLS) this.liveCalls.delete(this.liveCalls.keys().next().value);
      state = { text: '', detail: null, gaps: [], next: 0, missing: false };
      this.liveCalls.set(seq, state);
    }
    let delta = '';
    let gap = false;
    if (type === 'model_output' && typeof p.delta === 'string') {
      // The deltas of a call are numbered from 0: one numbered past the
      // next expected says that deltas before it did not reach the page
      // (they streamed while the stream reconnected or before the page
      // subscribed, or the server dropped them for a slow reader).
      if (typeof p.index === 'number') {
        if (p.index !== state.next) state.missing = true;
        state.next = p.index + 1;
      }
      delta = p.delta.slice(0, Math.max(0, LIVE_TEXT - state.text.length));
      if (delta.length < p.delta.length) state.cut = true;
      if (delta && state.missing) {
        // Text streamed before this delta is missing: the row marks where.
        state.gaps.push(state.text.length);
        state.missing = false;
        gap = true;
      }
      state.text += delta;
    } else if (type === 'model_usage' && p.usage) {
      state.detail = ' ' + p.usage.input_tokens + ' in / ' + p.usage.output_tokens + ' out tokens';
    } else if (type === 'model_request') {
      state.detail = ' ' + p.input_bytes + ' input bytes';
    }
    const entry = this.entries.get(seq);
    if (!entry) return; // not in the window: shown when its row is
    if (delta) {
      if (!entry.stream) this.liveText(entry, '', []);
      if (gap) entry.unwritten.push(null);
      entry.unwritten.push(delta);
      this.unwritten.add(entry);
      if (!this.writeFrame) this.writeFrame = requestAnimationFrame(() => this.writeText());
    } else if (state.detail !== null) {
      entry.detail.textContent = state.detail;
    }
    if (state.cut && !entry.cut) this.cutNote(entry);
  }

  // cutNote says under a model call's row that it streamed more text than
  // the page keeps while the call runs.
  cutNote(entry) {
    if (!entry.stream) this.liveText(entry, '', []);
    entry.cut = el('p', 'stream-cut muted', 'Only the first ' + LIVE_TEXT + ' characters streamed show while the call runs; ' +
      'its answer shows in full once it ends.');
    entry.li.append(entry.cut);
  }

  // liveText adds under a model call's row the text it streams, with a
  // mark at each of the offsets gaps where text did not reach the page.
  liveText(entry, text, gaps) {
    entry.stream = el('pre', 'stream');
    entry.stream.dataset.live = 'true';
    entry.li.append(entry.stream);
    let from = 0;
    for (const at of gaps) {
      writeStream(entry, text.slice(from, at));
      writeGap(entry);
      from = at;
    }
    writeStream(entry, from === 0 ? text : text.slice(from));
  }

  // answered shows under an ended model call's row, at once, the text it
  // answered: the text it streamed, or in its place when they differ (live
  // frames are best effort, and those sent while the stream reconnected
  // are not sent again; a mark of missing text differs too) the text of
  // its answer.
  answered(entry, result) {
    if (!result || !result.message || !Array.isArray(result.message.content)) return;
    const text = result.message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    if (entry.cut) {
      entry.cut.remove();
      entry.cut = null;
    }
    const unwritten = entry.unwritten.join(''); // without the marks of missing text
    entry.unwritten = [];
    this.unwritten.delete(entry);
    if (entry.stream.textContent + unwritten === text) {
      writeStream(entry, unwritten);
      return;
    }
    entry.stream.replaceChildren();
    entry.part = null;
    writeStream(entry, text);
  }

  // writeText appends to their rows the deltas received since the last
  // animation frame. No frame comes while the tab is hidden: the deltas of
  // the entries in the window wait for the next one. A row shown again
  // shows the call's text from its start.
  writeText() {
    this.writeFrame = 0;
    for (const entry of this.unwritten) {
      const deltas = entry.unwritten;
      entry.unwritten = [];
      // A null among the deltas marks where text did not reach the page.
      let from = 0;
      for (let i; (i = deltas.indexOf(null, from)) >= 0; from = i + 1) {
        writeStream(entry, deltas.slice(from, i).join(''));
        writeGap(entry);
      }
      writeStream(entry, (from === 0 ? deltas : deltas.slice(from)).join(''));
    }
    this.unwritten.clear();
  }

  // record takes a recorded event from the stream.
  record(ev) {
    const kind = ev.event_type;
    if (kind === 'model_call_started' && this.early.length) {
      // Live frames that overtook this call's record are its own now.
      const early = this.early;
      this.early = [];
      for (const [type, p] of early) this.live(type, p);
    }
    // The window shown takes it while it follows, and so does the one
    // that loads in its place, if that one follows.
    if (this.following) this.append(ev);
    if (this.pending) {
      // The window that loads shows at most the newest MAX_SHOWN of
      // them: past twice that, the older ones are let go.
      this.pending.push(ev);
      if (this.pending.length > 2 * MAX_SHOWN) this.pending.splice(0, this.pending.length - MAX_SHOWN);
    }
    if (envKinds.test(kind)) {
      if (this.envFrom > 0 && this.envScan !== true) this.hold(ev);
      else if (this.environment(ev)) this.renderEnvironments();
    }
    if (kind === 'session_ended' || kind === 'session_creation_failed') this.finished = true;
    if (/^model_call_(ended|failed)$/.test(kind) && ev.data) this.liveCalls.delete(ev.data.sequence);
    if (/^(turn_|session_|activation_)/.test(kind)) this.later('summary');
    // The transcript is read again while its tab shows, and else when
    // the tab is shown.
    if (/^(turn_ended|turn_failed|transcript_|session_creation_ended)/.test(kind) && transcriptShown()) this.later('transcript');
    this.later('pager');
  }

  // hold keeps a streamed record for the environments until the earlier
  // ones are folded. Past ENV_HELD records the held ones are let go and
  // the fold reads them with the earlier ones (a fold under way reads on
  // to the new end), so that a session followed for long holds no more.
  hold(ev) {
    this.envQueue.push(ev);
    if (this.envQueue.length > ENV_HELD) {
      this.envQueue = [];
      this.envFrom = ev.sequence;
    }
  }

  // append shows the next event at the end of the window, dropping the
  // oldest shown beyond MAX_SHOWN.
  append(ev) {
    this.hi = ev.sequence;
    this.render(ev);
    if (this.hi - this.lo + 1 > MAX_SHOWN) this.trim(this.hi - MAX_SHOWN + 1);
  }

  // trim drops the rows of the events before lo.
  trim(lo) {
    const rows = $('events').tBodies[0];
    while (rows.firstChild && Number(rows.firstChild.dataset.seq) < lo) rows.firstChild.remove();
    const tl = $('timeline');
    while (tl.firstChild && Number(tl.firstChild.dataset.seq) < lo) tl.firstChild.remove();
    for (const [seq, entry] of this.entries) {
      if (seq >= lo) break;
      this.entries.delete(seq);
      this.unwritten.delete(entry);
    }
    this.lo = lo;
  }

  // render adds an event's rows: one in the events table, and in the
  // timeline a row of its own or the closing of the row it ends. Only
  // Brain's own records (those without an origin) open and close rows: an
  // extension event or observation named like one is a row of its own.
  render(ev) {
    this.rawRow(ev);
    const kind = ev.event_type;
    const d = ev.data || {};
    const m = ev.origin ? null : kind.match(/^(.*)_(started|ended|failed)$/);
    if (m && m[2] !== 'started' && d.sequence && this.entries.has(d.sequence)) {
      this.close(this.entries.get(d.sequence), ev, m[2]);
    } else if (m && m[2] === 'started' && kind !== 'session_end_started') {
      this.open(m[1], ev);
    } else if (kind === 'session_end_started') {
      this.open('session_end', ev);
    } else if (kind === 'session_ended' && this.endEntry) {
      this.close(this.endEntry, ev, 'ended');
    } else {
      // The end of an entry whose start is outside the window shows as
      // a row of its own.
      for (const k of ['openTurn', 'openActivation', 'endEntry']) {
        if (m && this[k] && this[k].start.sequence === d.sequence) this[k] = null;
      }
      this.point(ev);
    }
  }

  // showWindow shows the events from lo on: PAGE of them, or with
  // following, all up to the newest and then new ones as they arrive.
  // Until they are read the window shown stays, following the session if
  // it does; a read that fails leaves it in place, so that the same
  // button reads the page again.
  async showWindow(lo, following) {
    const load = ++this.loads;
    lo = Math.max(1, lo);
    const hi = following ? this.last : Math.min(lo + PAGE - 1, this.last);
    this.pending = following ? [] : null;
    $('page-status').textContent = 'loading events #' + lo + '\u2013#' + hi + '\u2026';
    const evs = [];
    try {
      for (let after = lo - 1; after < hi;) {
        const page = await api('GET', '/v1/sessions/' + this.id + '/events?after=' + after, { signal: this.left.signal });
        if (this.stopped || load !== this.loads) return;
        if (!page.events || page.events.length === 0) break;
        for (const ev of page.events) if (ev.sequence <= hi) evs.push(ev);
        after = page.next_cursor;
      }
    } catch (e) {
      if (this.stopped || load !== this.loads) return;
      this.readFailed('events', e.message);
      this.pending = null;
      this.pager();
      return;
    }
    if (this.stopped || load !== this.loads) return;
    this.readDone('events');
    this.following = following;
    $('timeline').replaceChildren();
    $('events').tBodies[0].replaceChildren();
    this.entries = new Map();
    this.unwritten.clear();
    this.openTurn = this.openActivation = this.endEntry = null;
    this.lo = lo;
    this.hi = lo - 1;
    for (const ev of evs) {
      this.hi = ev.sequence;
      this.render(ev);
    }
    if (!following) this.continuing();
    const pending = this.pending || [];
    this.pending = null;
    for (const ev of pending) if (ev.sequence > this.hi) this.append(ev);
    this.pager();
  }

  // continuing marks the entries an older page leaves open: they end
  // after the page's last event (or have not ended yet), which the page
  // does not show, so they are not said to be running.
  continuing() {
    for (const entry of this.entries.values()) {
      if (entry.li.dataset.outcome !== 'running') continue;
      entry.li.dataset.outcome = 'continues';
      entry.outcome.replaceChildren(el('span', 'badge continues', 'continues after #' + this.hi));
    }
  }

  page(which) {
    let lo;
    switch (which) {
      case 'oldest': lo = 1; break;
      case 'older': lo = this.lo - PAGE; break;
      case 'newer': lo = this.hi + 1; break;
      default: lo = this.last - PAGE + 1;
    }
    lo = Math.max(1, lo);
    this.showWindow(lo, which === 'newest' || lo + PAGE - 1 >= this.last);
  }

  // pager shows which events the window holds and which pages are near.
  pager() {
    const whole = this.lo <= 1 && this.following;
    $('pager').hidden = whole;
    if (whole) return;
    $('page-oldest').disabled = $('page-older').disabled = this.lo <= 1;
    $('page-newer').disabled = $('page-newest').disabled = this.following;
    let s = this.hi >= this.lo ? 'events #' + this.lo + '\u2013#' + this.hi : 'no events';
    s += ' of ' + this.last;
    if (!this.following && this.last > this.hi) s += ' (' + (this.last - this.hi) + ' newer)';
    $('page-status').textContent = s;
  }

  // environmentsShown folds, the first time the environments tab shows,
  // the records before the first one streamed. A read that fails leaves
  // the fold to the next time the tab shows, which starts it afresh: the
  // records the failed one folded are not folded twice.
  async environmentsShown() {
    if (this.envFrom === 0 || this.envScan) return;
    this.envScan = 'scanning';
    this.envs = new Map();
    this.envStarts = new Map();
    // Until the fold ends the table is empty: the page says it is being
    // read, not that the session has no environments.
    const status = $('environments-status');
    try {
      for (let after = 0; after < this.envFrom;) {
        status.textContent = 'reading the session\u2019s records from #' + (after + 1) + ' to #' + this.envFrom + '\u2026';
        const page = await api('GET', '/v1/sessions/' + this.id + '/events?after=' + after, { signal: this.left.signal });
        if (this.stopped) return;
        if (!page.events || page.events.length === 0) break;
        for (const ev of page.events) if (ev.sequence <= this.envFrom && envKinds.test(ev.event_type)) this.environment(ev);
        after = page.next_cursor;
      }
    } catch (e) {
      if (!this.stopped) {
        this.readFailed('environments', e.message);
        status.textContent = 'the session\u2019s records could not be read; they are read again when this tab shows';
      }
      this.envScan = null;
      return;
    }
    this.readDone('environments');
    for (const ev of this.envQueue) this.environment(ev);
    this.envQueue = [];
    this.envScan = true;
    this.renderEnvironments();
  }

  depth(family, ev) {
    if (family in depthOf) {
      let dep = depthOf[family];
      if (dep === 2 && !this.openActivation) dep = this.openTurn ? 1 : 0;
      return dep;
    }
    if (ev.origin && ev.origin.kind === 'tool') return 3;
    if (this.openActivation) return 2;
    return this.openTurn ? 1 : 0;
  }

  row(family, ev, kindLabel, summary) {
    const li = el('li', 'entry ' + (family === 'turn' ? 'turn' : ''));
    li.dataset.kind = family;
    li.dataset.seq = ev.sequence;
    const depth = this.depth(family, ev);
    li.style.setProperty('--depth', depth);
    const detail = el('span', 'detail');
    const sum = el('span', 'summary', summary);
    sum.append(detail);
    const entry = {
      family, start: ev, li, detail,
      seq: el('span', 'seq', '#' + ev.sequence),
      kind: el('span', 'kind', kindLabel),
      summary: sum,
      duration: el('span', 'duration'),
      outcome: el('span', 'outcome'),
      origin: el('span', 'origin', originText(ev.origin)),
      stream: null, // the pre of the text a model call streams
      part: null, // its last part, and its length and whether it ends a line
      partChars: 0,
      partEndsLine: false,
      unwritten: [], // streamed deltas not yet written to stream
      cut: null, // the note that the streamed text is cut short
    };
    li.append(entry.seq, entry.kind, entry.summary, entry.duration, entry.outcome, entry.origin);
    $('timeline').append(li);
    return entry;
  }

  open(family, ev) {
    const entry = this.row(family, ev, family.replace(/_/g, ' '), startSummary(family, ev.data || {}));
    entry.outcome.append(el('span', 'badge running', 'running'));
    entry.li.dataset.outcome = 'running';
    this.entries.set(ev.sequence, entry);
    // What the call streamed before its row was shown.
    const state = family === 'model_call' && this.liveCalls.get(ev.sequence);
    if (state && state.text !== '') this.liveText(entry, state.text, state.gaps);
    if (state && state.cut) this.cutNote(entry);
    if (state && state.detail !== null) entry.detail.textContent = state.detail;
    if (family === 'turn') this.openTurn = entry;
    if (family === 'activation') this.openActivation = entry;
    if (family === 'session_end') this.endEntry = entry;
  }

  close(entry, ev, how) {
    const d = ev.data || {};
    let outcome = how === 'failed' ? 'failed' : 'ok';
    if (how !== 'failed' && (d.is_error || (d.outcome && d.outcome.status && d.outcome.status !== 'ok'))) {
      outcome = d.outcome && d.outcome.status && d.outcome.status !== 'ok' ? d.outcome.status : 'error';
    }
    entry.end = ev;
    entry.li.dataset.outcome = outcome;
    const ms = ev.recorded_at_ms - entry.start.recorded_at_ms;
    entry.duration.textContent = ms + ' ms';
    entry.li.dataset.durationMs = ms;
    const label = how === 'failed' ? 'failed: ' + (d.code || 'failed') : outcome;
    entry.outcome.replaceChildren(el('span', 'badge ' + (outcome === 'ok' ? 'ok' : 'error'), label));
    if (entry.family === 'model_call') {
      entry.detail.textContent = '';
      if (entry.stream && how === 'ended') this.answered(entry, d.result);
      // A failed call has no answer to show in full.
      if (entry.cut && how === 'failed') {
        entry.cut.textContent = 'Only the first ' + LIVE_TEXT + ' characters streamed show: the call failed, and its text is not recorded.';
      }
    }
    const more = endSummary(entry.family, d);
    if (more) entry.summary.append(el('span', 'detail', ' \u2192 ' + more));
    if (how === 'failed' && d.message) entry.outcome.title = d.message;
    if (entry === this.openTurn) this.openTurn = null;
    if (entry === this.openActivation) this.openActivation = null;
  }

  point(ev) {
    const kind = ev.event_type;
    const o = ev.origin;
    let family = 'record';
    let label = kind;
    if (o && o.kind === 'environment') { family = 'observation'; label = 'observation: ' + kind; }
    else if (o) { family = 'extension'; }
    const e = this.row(family, ev, label, pointSummary(kind, ev.data));
    e.li.dataset.event = kind;
  }

  rawRow(ev) {
    const tr = el('tr');
    tr.dataset.seq = ev.sequence;
    const pre = el('pre', null, JSON.stringify(ev.data, null, 1));
    const td = el('td');
    td.append(pre);
    const at = el('td', 'mono');
    at.append(recordedAt(ev.recorded_at_ms));
    tr.append(el('td', 'mono', ev.sequence), at,
      el('td', 'mono', ev.event_type), el('td', 'origin', originText(ev.origin)), td);
    $('events').tBodies[0].append(tr);
  }

  // environment folds a record that describes environments and their
  // bindings into the environments table's model; it answers whether it
  // changed.
  environment(ev) {
    const d = ev.data || {};
    const kind = ev.event_type;
    const get = (name) => {
      if (!this.envs.has(name)) this.envs.set(name, { name, driver: '', binding: null, state: 'declared', tools: [], calls: 0, last: '' });
      return this.envs.get(name);
    };
    if (kind === 'session_creation_started') {
      for (const e of d.environments || []) get(e.name).driver = e.driver || '';
      for (const t of d.tools || []) for (const env of Object.keys(t.placements || {})) get(env).tools.push(t.name);
    } else if (kind === 'tool_call_started' && d.environment) {
      get(d.environment).calls++;
    } else {
      const m = kind.match(/^environment_(setup|call|detach|teardown)_(started|ended|failed)$/);
      if (m) {
        let name = d.environment;
        if (m[2] === 'started') {
          if (name) this.envStarts.set(ev.sequence, name);
        } else {
          if (!name) name = this.envStarts.get(d.sequence);
          this.envStarts.delete(d.sequence);
        }
        if (!name) return false;
        const e = get(name);
        if (m[2] === 'started' && d.binding) e.binding = d.binding;
        e.last = m[1] + ' ' + m[2] + ' #' + ev.sequence;
        const states = {
          setup: { started: 'setting up', ended: 'ready', failed: 'failed' },
          call: {},
          detach: { started: 'detaching', ended: 'detached', failed: 'unknown' },
          teardown: { started: 'tearing down', ended: 'closed', failed: 'unknown' },
        };
        if (states[m[1]][m[2]]) e.state = states[m[1]][m[2]];
      } else if (kind === 'environment_closed' && d.environment) {
        get(d.environment).state = 'closed';
      } else if (kind === 'environment_unreachable' && d.environment) {
        get(d.environment).state = 'unreachable';
      } else {
        return false;
      }
    }
    return true;
  }

  renderEnvironments() {
    const tbody = $('environments').tBodies[0];
    tbody.replaceChildren();
    $('environments-status').textContent = this.envs.size === 0 ? 'no environments' : '';
    for (const e of this.envs.values()) {
      const tr = el('tr');
      tr.dataset.env = e.name;
      const st = el('td');
      st.append(el('span', 'badge ' + e.state.replace(/ /g, '-'), e.state));
      tr.append(el('td', 'mono', e.name), el('td', null, e.driver),
        el('td', 'mono binding', e.binding ? e.binding.name + ' #' + e.binding.sequence : ''),
        st, el('td', null, e.tools.join(', ')), el('td', 'mono calls', e.calls), el('td', 'muted', e.last));
      tbody.append(tr);
    }
  }
}

// FrameSplitter cuts the text of an event stream into its frames: the
// text before each blank line, with its line ends made LF. It searches
// each chunk for a frame's end once, and keeps the chunks of a frame that
// has not ended apart until it ends, so that a frame of any size, arriving
// in any number of chunks, costs in proportion to its size.
class FrameSplitter {
  constructor() {
    this.parts = []; // the text of the frame not yet ended, in chunks
    this.cr = false; // the last chunk ended in a CR, held back
  }

  // push takes the next chunk of the stream and answers the frames it
  // ends.
  push(chunk) {
    // A CR that ends a chunk may begin a CRLF that the next one ends.
    if (this.cr) chunk = '\r' + chunk;
    this.cr = chunk.endsWith('\r');
    if (this.cr) chunk = chunk.slice(0, -1);
    chunk = chunk.replace(/\r\n?/g, '\n');
    const frames = [];
    let from = 0;
    // A blank line may begin in the text before this chunk.
    const parts = this.parts;
    if (parts.length > 0 && chunk.startsWith('\n') && parts[parts.length - 1].endsWith('\n')) {
      frames.push(parts.join('').slice(0, -1));
      this.parts = [];
      from = 1;
    }
    for (let i; (i = chunk.indexOf('\n\n', from)) >= 0; from = i + 2) {
      frames.push(this.parts.join('') + chunk.slice(from, i));
      this.parts = [];
    }
    if (from < chunk.length) this.parts.push(from === 0 ? chunk : chunk.slice(from));
    return frames;
  }
}

// writeStream appends text to the stream of entry, in parts of about
// STREAM_PART characters.
function writeStream(entry, text) {
  while (text !== '') {
    if (!entry.part || (entry.partChars >= STREAM_PART && entry.partEndsLine) || entry.partChars >= STREAM_LINE) {
      entry.part = el('span', 'part');
      entry.stream.append(entry.part);
      entry.partChars = 0;
    }
    // The part takes the text up to the end of the line that crosses
    // STREAM_PART, at most up to STREAM_LINE.
    const room = STREAM_LINE - entry.partChars;
    const head = text.length > room ? text.slice(0, room) : text;
    let take = head.length;
    if (entry.partChars + head.length > STREAM_PART) {
      const nl = head.indexOf('\n', Math.max(0, STREAM_PART - entry.partChars - 1));
      if (nl >= 0) take = nl + 1;
    }
    const piece = take === text.length ? text : text.slice(0, take);
    const last = entry.part.lastChild;
    if (last && last.length < STREAM_NODE) last.appendData(piece);
    else entry.part.append(document.createTextNode(piece));
    entry.partChars += take;
    entry.partEndsLine = piece.endsWith('\n');
    text = text.slice(take);
  }
}

// writeGap marks in the stream of entry that text streamed there did not
// reach the page; the text after it goes in a part of its own.
function writeGap(entry) {
  entry.stream.append(el('span', 'stream-gap', '[text streamed here did not reach the page]'));
  entry.part = null;
}

function startSummary(family, d) {
  switch (family) {
    case 'session_creation':
      return (d.model ? d.model.provider + '/' + d.model.name : '') + ', ' + (d.tools || []).length + ' tools, ' +
        (d.environments || []).length + ' environments';
    case 'turn': return d.input ? short(d.input.message, 200) : '';
    case 'activation': return 'trigger ' + (d.trigger || '');
    case 'model_call': return (d.messages || 0) + ' messages, ' + (d.tools || 0) + ' tools';
    case 'tool_call': return (d.name || '') + ' on ' + (d.environment || '?') + ' ' + short(d.input, 120);
    case 'tool_cancel': return 'tool call #' + (d.sequence || '');
    default:
      if (family.startsWith('environment_')) {
        return (d.environment || (d.binding && d.binding.name) || '') + (d.request && d.request.type ? ' ' + d.request.type : '');
      }
      return short(d, 160);
  }
}

function endSummary(family, d) {
  if (d.code) return d.code + (d.message ? ' (' + short(d.message, 120) + ')' : '');
  switch (family) {
    case 'turn': return d.result !== undefined ? short(d.result, 160) : '';
    case 'model_call': {
      const r = d.result || {};
      let s = r.stop_reason || '';
      if (r.usage) s += ', ' + r.usage.input_tokens + ' in / ' + r.usage.output_tokens + ' out tokens';
      return s;
    }
    case 'tool_call': return d.outcome ? short(d.outcome.value !== undefined ? d.outcome.value : d.outcome, 160) : '';
    default:
      if (d.receipt && d.receipt.type) return d.receipt.type;
      return '';
  }
}

function pointSummary(kind, d) {
  if (kind === 'transcript_delta' && d && d.append) return 'appends ' + d.append.length + ' messages';
  return short(d, 200);
}

// blockText answers the elements showing the text of a transcript block:
// at most TRANSCRIPT_TEXT characters of it and, when it is longer, how
// many more it has and a button that shows them. whole holds the text of
// the blocks the operator asked to see whole, by place: the block at
// place shows whole if it is there with the same text, and is put there
// when the button is pressed.
function blockText(text, place, whole) {
  text = text === undefined || text === null ? '' : String(text);
  if (whole.has(place) && whole.get(place) !== text) whole.delete(place); // another text is there now
  if (text.length <= TRANSCRIPT_TEXT || whole.has(place)) return [el('pre', null, text)];
  let cut = TRANSCRIPT_TEXT;
  const c = text.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--; // not between the halves of a character
  const pre = el('pre', null, text.slice(0, cut) + '\u2026');
  const more = el('p', 'block-more muted', (text.length - cut) + ' more characters do not show. ');
  const all = el('button', null, 'Show all');
  all.type = 'button';
  all.addEventListener('click', () => {
    whole.set(place, text);
    pre.textContent = text;
    more.remove();
  });
  more.append(all);
  return [pre, more];
}

// renderTranscript shows the messages of transcript part t (those from
// its offset on), and how many earlier ones it leaves out. whole holds
// the blocks asked to show whole (see blockText); those that no longer
// show are let go.
function renderTranscript(t, whole) {
  const box = $('transcript');
  box.replaceChildren();
  const messages = t.messages || [];
  const from = t.offset || 0;
  const places = new Set();
  messages.forEach((m, i) => {
    const div = el('div', 'message');
    div.dataset.role = m.role;
    div.append(el('div', 'role', m.role));
    (m.content || []).forEach((b, j) => {
      const place = (from + i) + '/' + j;
      places.add(place);
      const blk = el('div', 'block');
      blk.dataset.type = b.type;
      if (b.type === 'text') {
        blk.append(...blockText(b.text, place, whole));
      } else if (b.type === 'tool_use') {
        blk.append(el('span', 'block-label', 'tool call ' + b.id + ': ' + b.name), ...blockText(JSON.stringify(b.input), place, whole));
      } else if (b.type === 'tool_result') {
        blk.append(el('span', 'block-label', 'tool result ' + b.tool_use_id + (b.is_error ? ' (error)' : '')),
          ...blockText(typeof b.content === 'string' ? b.content : JSON.stringify(b.content, null, 1), place, whole));
      } else if (b.type === 'image' || b.type === 'file') {
        blk.append(el('span', 'block-label', b.type + ' ' + (b.media_type || '')), el('pre', null, b.url));
      } else {
        blk.append(el('span', 'block-label', b.type + (b.format ? ' ' + b.format : '')));
      }
      div.append(blk);
    });
    box.append(div);
  });
  for (const place of whole.keys()) if (!places.has(place)) whole.delete(place);
  $('transcript-through').textContent = 'through sequence ' + t.through_sequence;
  $('transcript-earlier').hidden = from === 0;
  $('transcript-earlier-note').textContent = from + (from === 1 ? ' earlier message does' : ' earlier messages do') + ' not show.';
  $('transcript-more').textContent = 'Show ' + Math.min(from, TRANSCRIPT_PAGE) + ' earlier';
}

// ---------------------------------------------------------------- wiring

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    $('login-error').textContent = '';
    try {
      await api('GET', '/v1/sessions');
    } catch (e) {
      if (e.status !== 401) {
        // Not kept: a token that cannot be sent (a character a header
        // cannot carry) or that was not checked would fail every request.
        // It goes back in the field, to be corrected or sent again once
        // the server answers.
        sessionStorage.removeItem(TOKEN_KEY);
        $('token').value = t;
        $('forget').hidden = true;
        $('login-error').textContent = e instanceof ApiError ? e.message : 'The token could not be checked: ' + e.message;
      }
      return;
    }
    route();
  });
  $('forget').addEventListener('click', () => forget(''));
  // An action's answer shows on the session it was sent to, whichever
  // shows when it comes (see drafts).
  const failed = (id, error) => {
    if (shows(id)) $('action-error').textContent = error;
    else missed.set(id, error);
  };
  $('send-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!(view instanceof SessionView)) return;
    const id = view.id;
    const input = $('message');
    const text = input.value;
    // One message at a time: a second Enter while the first is sent
    // would send it twice, under another Idempotency-Key.
    if (!text || sending.has(id)) return;
    sending.add(id);
    $('send').disabled = true;
    $('action-error').textContent = '';
    const prior = unsettled.get(id);
    const key = prior && prior.text === text ? prior.key : newKey();
    unsettled.set(id, { text, key });
    try {
      await api('POST', '/v1/sessions/' + id + '/messages', {
        headers: { 'Idempotency-Key': key, 'Prefer': 'respond-async' },
        body: { input: { message: text } },
      });
      unsettled.delete(id);
      // The text sent leaves the box (or the draft kept for the session),
      // unless it was changed since.
      if (shows(id)) {
        if (input.value === text) input.value = '';
      } else if (drafts.get(id) === text) {
        drafts.delete(id);
      }
    } catch (e) {
      if (e instanceof ApiError && e.status < 500) unsettled.delete(id);
      failed(id, 'send: ' + e.message);
    } finally {
      sending.delete(id);
      if (shows(id)) $('send').disabled = false;
    }
  });
  $('cancel').addEventListener('click', async () => {
    if (!(view instanceof SessionView)) return;
    const id = view.id;
    $('action-error').textContent = '';
    try {
      await api('POST', '/v1/sessions/' + id + '/cancel', { headers: { 'Idempotency-Key': newKey() } });
    } catch (e) {
      failed(id, 'cancel: ' + e.message);
    }
  });
  // The tabs are a tab list: only the selected tab is in the Tab
  // sequence, and the arrow keys, Home and End select the tab they move
  // the focus to.
  const tabs = Array.from(document.querySelectorAll('.tabs button'));
  for (const b of tabs) {
    b.tabIndex = b.classList.contains('active') ? 0 : -1;
    b.addEventListener('click', () => {
      for (const o of tabs) {
        o.classList.toggle('active', o === b);
        o.setAttribute('aria-selected', String(o === b));
        o.tabIndex = o === b ? 0 : -1;
      }
      for (const t of document.querySelectorAll('.tab')) t.hidden = t.id !== 'tab-' + b.dataset.tab;
      if (b.dataset.tab === 'transcript' && view instanceof SessionView) view.transcript();
      if (b.dataset.tab === 'environments' && view instanceof SessionView) view.environmentsShown();
    });
  }
  document.querySelector('.tabs').addEventListener('keydown', (ev) => {
    const i = tabs.indexOf(document.activeElement);
    if (i < 0 || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    let to;
    switch (ev.key) {
      case 'ArrowRight': to = i + 1; break;
      case 'ArrowLeft': to = i - 1; break;
      case 'Home': to = 0; break;
      case 'End': to = tabs.length - 1; break;
      default: return;
    }
    ev.preventDefault();
    const b = tabs[(to + tabs.length) % tabs.length];
    b.focus();
    b.click();
  });
  for (const which of ['oldest', 'older', 'newer', 'newest']) {
    $('page-' + which).addEventListener('click', () => {
      if (view instanceof SessionView) view.page(which);
    });
  }
  $('transcript-more').addEventListener('click', () => {
    if (view instanceof SessionView) view.earlierMessages();
  });
  window.addEventListener('hashchange', route);
  route();
});
