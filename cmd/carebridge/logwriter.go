package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logWriter buffers log lines and writes them at most every interval (or
// when 64 KiB are waiting), so a busy server does not make one write system
// call per access-log line. Close flushes what is left.
type logWriter struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogWriter(w io.Writer, interval time.Duration) *logWriter {
	l := &logWriter{buf: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.flush()
			case <-l.stop:
				l.flush()
				return
			}
		}
	}()
	return l
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.buf.Flush() // stderr is gone: nowhere left to report it
}

// Close stops the flusher and writes what is buffered.
func (l *logWriter) Close() error {
	close(l.stop)
	<-l.done
	return nil
}
