package storage

import (
	"context"
	"fmt"
	"time"
)

// OrphanAge is how old an object without a blob entry must be before the
// sweeper removes it. An upload writes its object, then inserts the entry
// at once; only a crash in between leaves an object behind, and an hour
// is far past any upload still finishing.
const OrphanAge = time.Hour

// IncompleteAge is how old the leftovers of an unfinished write (a
// temporary file, an incomplete multipart upload) must be before the
// sweeper removes them: far past any upload still going on.
const IncompleteAge = 24 * time.Hour

// sweepBatch bounds how many names one check against the entries holds.
const sweepBatch = 500

// SweepOrphans removes the objects of every container that no blob entry
// names and that were last written before cutoff, and returns how many it
// removed. The entries are checked a batch at a time, right before that
// batch's objects go, so an entry committed meanwhile keeps its object.
// Several instances may sweep at once (a delete of a missing object is not
// an error); the caller holds a claim so that usually one does.
func (s *Service) SweepOrphans(ctx context.Context, cutoff time.Time) (int, error) {
	removed := 0
	for _, c := range Containers {
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			known, err := s.blobs.Known(ctx, c, batch)
			if err != nil {
				return err
			}
			for _, name := range batch {
				if known[name] {
					continue
				}
				if err := s.objects.Delete(ctx, c, name); err != nil {
					return err
				}
				removed++
			}
			batch = batch[:0]
			return nil
		}
		err := s.objects.List(ctx, c, func(name string, modified time.Time) error {
			if !modified.Before(cutoff) {
				return nil
			}
			batch = append(batch, name)
			if len(batch) >= sweepBatch {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return removed, fmt.Errorf("sweep %s: %w", c, err)
		}
	}
	return removed, nil
}

// SweepIncomplete removes, in every container, what writes that never
// finished left in the object store and that began before cutoff (a crash
// or a kill mid-upload leaves them; a failed upload cleans up itself), and
// returns how many it removed.
func (s *Service) SweepIncomplete(ctx context.Context, cutoff time.Time) (int, error) {
	removed := 0
	for _, c := range Containers {
		n, err := s.objects.SweepIncomplete(ctx, c, cutoff)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("sweep incomplete writes of %s: %w", c, err)
		}
	}
	return removed, nil
}
