package httpapi

import "time"

// push hands a batch to the stream; it never blocks. An idle stream with
// a direct sink writes it at once, without waiting; otherwise the frames
// are queued for the writer goroutine.
func (st *stream) push(b *batch, backlog int) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	if st.catching || st.writing || len(st.queue) > 0 || st.direct == nil {
		st.queueLocked(b.frames, backlog)
		st.kickLocked()
		st.mu.Unlock()
		return
	}
	st.writing = true
	st.activity = time.Now()
	st.mu.Unlock()

	// The writer owns lastSeq while writing is set.
	chunk, last, seq := b.chunk, false, st.lastSeq
	if out, shared := st.fresh(b.frames); !shared {
		chunk = appendChunk(nil, out)
		last = len(out) > 0 && out[len(out)-1].last
		if len(out) > 0 {
			seq = lastSeqOf(out, seq)
		}
	} else {
		last = b.frames[len(b.frames)-1].last
		seq = lastSeqOf(b.frames, seq)
	}
	n, err := 0, error(nil)
	if len(chunk) > 0 {
		n, err = st.direct.tryWrite(chunk)
	}
	if err != nil {
		st.markBroken()
		go st.close()
		return
	}
	st.lastSeq = seq
	if n < len(chunk) {
		// The socket buffer is full: a goroutine finishes the write.
		st.s.fullWrites.Add(1)
		go st.complete(chunk[n:], last)
		return
	}
	if last {
		go st.close()
		return
	}
	st.mu.Lock()
	st.writing = false
	st.kickLocked() // ended meanwhile
	st.mu.Unlock()
}

// fresh answers the frames of a batch this stream has to write: those not
// already written by the catch-up, up to the end of the session; shared
// reports that they are all of the batch.
func (st *stream) fresh(frames []*frame) (out []*frame, shared bool) {
	for i, fr := range frames {
		if (fr.seq != 0 && fr.seq <= st.lastSeq) || (fr.last && i < len(frames)-1) {
			out = make([]*frame, 0, len(frames))
			for _, fr := range frames {
				if fr.seq != 0 && fr.seq <= st.lastSeq {
					continue
				}
				out = append(out, fr)
				if fr.last {
					break
				}
			}
			return out, false
		}
	}
	return frames, true
}

// lastSeqOf answers the sequence of the last recorded event of frames, or
// seq when there is none.
func lastSeqOf(frames []*frame, seq uint64) uint64 {
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].seq != 0 {
			return frames[i].seq
		}
	}
	return seq
}

// queueLocked queues frames for the writer goroutine; a stream that would
// hold more than backlog records ends (lagged). A stream still catching
// up is not lagging: it drops its queue instead and reads those records
// from the journal when its catch-up reaches them (behind).
func (st *stream) queueLocked(frames []*frame, backlog int) {
	queued := false
	for _, fr := range frames {
		if st.ended {
			break
		}
		if fr.seq != 0 {
			if st.events >= backlog && st.catching {
				// The live frames go too: queued after the records
				// the catch-up writes, they would come out of order.
				st.queue, st.events, st.lives = nil, 0, 0
				st.behind = true
			} else if st.events >= backlog {
				st.s.log.Debug("stream subscriber lagged", "session", st.f.id)
				st.queue, st.events, st.lives = nil, 0, 0
				st.ended, st.lagged = true, true
				break
			}
			st.events++
		} else {
			if st.lives >= maxQueuedLive {
				continue
			}
			st.lives++
		}
		st.queue = append(st.queue, fr)
		queued = true
	}
	if queued {
		st.activity = time.Now()
	}
}

// complete finishes, on the writer goroutine, a write the socket did not
// take at once, then drains the queue.
func (st *stream) complete(rest []byte, last bool) {
	if err := st.direct.writeBytes(rest, st.deadline()); err != nil || last {
		if err != nil {
			st.markBroken()
		}
		st.close()
		return
	}
	st.mu.Lock()
	st.activity = time.Now()
	st.mu.Unlock()
	st.drain()
}

// end stops accepting frames; the stream finishes after its queue, or at
// once with drop.
func (st *stream) end(drop bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if drop {
		st.queue, st.events, st.lives = nil, 0, 0
	}
	st.ended = true
	st.kickLocked()
}

// kickLocked starts the writer when there is something to do.
func (st *stream) kickLocked() {
	if st.catching || st.writing || st.closed || (len(st.queue) == 0 && !st.ended) {
		return
	}
	st.writing = true
	go st.drain()
}

// drain writes the queue until it is empty, then finishes an ended stream.
func (st *stream) drain() {
	for {
		st.mu.Lock()
		batch := st.queue
		st.queue, st.events, st.lives = nil, 0, 0
		if len(batch) == 0 {
			st.writing = false
			if !st.ended {
				st.mu.Unlock()
				return
			}
			st.mu.Unlock()
			st.close()
			return
		}
		st.mu.Unlock()
		out := batch[:0]
		last := false
		for _, fr := range batch {
			if fr.seq != 0 {
				if fr.seq <= st.lastSeq {
					continue // already written by the catch-up
				}
				st.lastSeq = fr.seq
			}
			out = append(out, fr)
			if fr.last {
				last = true
				break
			}
		}
		if len(out) > 0 {
			if err := st.sink.write(out, st.deadline()); err != nil {
				st.markBroken()
				st.close()
				return
			}
		}
		if last {
			st.close()
			return
		}
		st.mu.Lock()
		st.activity = time.Now()
		st.mu.Unlock()
	}
}

// markBroken records that a write to the stream failed.
func (st *stream) markBroken() {
	st.mu.Lock()
	st.broken = true
	st.mu.Unlock()
}

// close finishes the response and unregisters the stream, once.
func (st *stream) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed, st.ended = true, true
	st.queue = nil
	lagged, broken := st.lagged, st.broken
	onClosed := st.onClosed
	st.onClosed = nil
	st.mu.Unlock()
	st.s.observer().StreamClosed(lagged)
	st.s.detach(st)
	st.sink.finish(broken)
	close(st.done)
	if onClosed != nil {
		onClosed()
	}
	st.s.streams.Done()
}
