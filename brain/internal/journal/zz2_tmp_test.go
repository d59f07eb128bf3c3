package journal

import (
	"testing"
)

func BenchmarkZZRead(b *testing.B) {
	dir := reopenFixture(b)
	fs, _ := OpenFileStore(dir, nil)
	defer fs.Close()
	fs.Next(bg, "s")
	for _, pr := range []int{100, 1000, 20000} {
		b.Run(string(rune('a'+len(b.Name())%3))+"-"+itoa(pr), func(b *testing.B) {
			for b.Loop() {
				after := uint64(0)
				for {
					page, _ := fs.Read(bg, "s", after, pr, 0)
					if len(page) == 0 {
						break
					}
					after = page[len(page)-1].Sequence
				}
			}
		})
	}
	b.Run("recover", func(b *testing.B) {
		s, _ := fs.session("s")
		for b.Loop() {
			s.mu.Lock()
			fs.recover(s)
			s.mu.Unlock()
		}
	})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
