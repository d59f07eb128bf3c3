package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// countSearched makes the page count, in window.searched, the characters
// of the strings it searches for a line break (the end of an event stream
// record is a blank line), and in window.searches the searches.
const countSearched = `(() => {
  window.searched = 0;
  window.searches = 0;
  const indexOf = String.prototype.indexOf;
  String.prototype.indexOf = function (s, from) {
    if (typeof s === 'string' && indexOf.call(s, '\n') >= 0) {
      window.searched += this.length;
      window.searches++;
    }
    return indexOf.call(this, s, from);
  };
  return true;
})()`

// TestInspectorMultiMegabyteRecord: a session streams one record of 4 MiB,
// which arrives in pieces of 16 KiB. The page shows it whole, and finding where
// it ends searches each character received a bounded number of times:
// searching the whole of what was received so far on every chunk searched
// it about as many times as it has chunks, time quadratic in its size.
func TestInspectorMultiMegabyteRecord(t *testing.T) {
	const size = 4 << 20
	b := newBrowser(t, 180*time.Second)
	const token = "big-record-token"
	srv := serveInProcess(t, token, 0)
	proxy := newPacedProxy(t, srv.url, 16<<10, time.Millisecond)
	id := srv.session(t)
	sum, err := srv.engine.Send(context.Background(), id, api.UserInput{Message: fmt.Sprint("blob ", size)})
	if err != nil {
		t.Fatal(err)
	}
	blob := srv.lastOf(t, id, "blob")

	b.login(proxy.url(), token)
	var ok bool
	b.eval(countSearched, &ok)
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("the session shows", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.getElementById('live').dataset.state === 'following'`, sum.LastSequence), 120*time.Second)

	var shown struct {
		Length int  `json:"length"`
		Whole  bool `json:"whole"`
	}
	b.eval(fmt.Sprintf(`(() => {
  const text = JSON.parse(document.querySelector('#events tr[data-seq="%d"] pre').textContent).text;
  return {length: text.length, whole: text === 'abcdefghij'.repeat(%d).slice(0, %d)};
})()`, blob, size/10+1, size), &shown)
	if shown.Length != size || !shown.Whole {
		t.Errorf("the record shows a text of %d characters (the one sent: %v), want the %d sent", shown.Length, shown.Whole, size)
	}
	var searched struct {
		Chars    int `json:"chars"`
		Searches int `json:"searches"`
	}
	b.eval(`({chars: window.searched, searches: window.searches})`, &searched)
	t.Logf("finding the ends of the records of %d characters searched %d characters in %d searches", size, searched.Chars, searched.Searches)
	if limit := 2*size + 1<<20; searched.Chars > limit {
		t.Errorf("finding the ends of the records, about %d characters, searched %d characters in %d searches, want at most %d",
			size, searched.Chars, searched.Searches, limit)
	}
}
