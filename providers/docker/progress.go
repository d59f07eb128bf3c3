package docker

import (
	"time"

	"github.com/brain-in-go/brain/internal/progress"
)

// stepper answers a function that reports a step of subject starting and
// answers the function that reports its end (nothing without a Progress
// hook).
func (p *Provider) stepper(subject string) func(step string) func(error) {
	return func(step string) func(error) {
		if p.progress == nil {
			return func(error) {}
		}
		start := time.Now()
		p.progress(progress.Event{Subject: subject, Step: step, Status: progress.Started})
		return func(err error) {
			e := progress.Event{Subject: subject, Step: step, Status: progress.Finished, Elapsed: time.Since(start)}
			if err != nil {
				e.Status, e.Detail = progress.Failed, err.Error()
			}
			p.progress(e)
		}
	}
}
