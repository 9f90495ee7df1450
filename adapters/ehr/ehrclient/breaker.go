package ehrclient

import (
	"errors"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/carebridge/carebridge/core"
)

// The breaker states as a metric receives them (BreakerMetrics).
const (
	Closed   = 0
	HalfOpen = 1
	Open     = 2
)

// Verdict is what one call tells of the EHR's health.
type Verdict uint8

const (
	// Success: the EHR answered (whatever the answer).
	Success Verdict = iota
	// Failure: the EHR failed; Failures in a row open the breaker.
	Failure
	// Ignore: the call says nothing of the EHR (the caller went away, no
	// credentials could be had, …); it is not counted.
	Ignore
)

// BreakerMetrics receives the breaker's state: Closed, HalfOpen or Open.
type BreakerMetrics interface{ BreakerState(state int) }

// BreakerConfig describes a Breaker.
type BreakerConfig struct {
	Name     string        // the EHR system's name, for its errors
	Failures uint32        // failures in a row that open it
	Open     time.Duration // how long it stays open before one trial call
	// Metrics, when set, is told the state at once (closed) and at every
	// change.
	Metrics BreakerMetrics
	// OnChange, when set, is told every change of state.
	OnChange func(from, to gobreaker.State)
}

// Breaker is a circuit breaker (gobreaker) that the caller tells what
// each call's outcome was worth: a Verdict, not an error type.
type Breaker struct {
	name string
	cb   *gobreaker.TwoStepCircuitBreaker[struct{}]
}

// What done hands gobreaker for each Verdict.
var (
	errFailure = errors.New("the EHR failed")
	errIgnore  = errors.New("not the EHR's failure")
)

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) *Breaker {
	failures := cfg.Failures
	b := &Breaker{name: cfg.Name}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         cfg.Name,
		MaxRequests:  1,
		Timeout:      cfg.Open,
		ReadyToTrip:  func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == errIgnore },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if cfg.OnChange != nil {
				cfg.OnChange(from, to)
			}
			if cfg.Metrics != nil {
				cfg.Metrics.BreakerState(metricState(to))
			}
		},
	})
	if cfg.Metrics != nil {
		cfg.Metrics.BreakerState(Closed)
	}
	return b
}

// Allow asks the breaker for one call. Refused, it answers a *core.Error
// KindUnavailable "circuit_open". Allowed, the caller must call done once
// with the call's verdict.
func (b *Breaker) Allow() (done func(Verdict), err error) {
	report, err := b.cb.Allow()
	if err != nil {
		return nil, &core.Error{Kind: core.KindUnavailable, Code: "circuit_open",
			Message: b.name + " is temporarily unavailable after repeated failures", Err: err}
	}
	return func(v Verdict) {
		switch v {
		case Success:
			report(nil)
		case Ignore:
			report(errIgnore)
		default:
			report(errFailure)
		}
	}, nil
}

// IsOpen reports whether the breaker refuses calls now.
func (b *Breaker) IsOpen() bool { return b.cb.State() == gobreaker.StateOpen }

// State is the breaker's state as a span tells it: closed, half_open or
// open.
func (b *Breaker) State() string {
	switch b.cb.State() {
	case gobreaker.StateOpen:
		return "open"
	case gobreaker.StateHalfOpen:
		return "half_open"
	}
	return "closed"
}

// metricState is a gobreaker state as BreakerMetrics receives it.
func metricState(s gobreaker.State) int {
	switch s {
	case gobreaker.StateOpen:
		return Open
	case gobreaker.StateHalfOpen:
		return HalfOpen
	}
	return Closed
}
