package s3

// SetSweepPage makes SweepIncomplete list n multipart uploads at a time, so
// a test sees it page.
func (s *Store) SetSweepPage(n int32) { s.sweepPage = n }
