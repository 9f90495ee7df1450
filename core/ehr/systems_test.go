package ehr

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// swappable is Systems whose answer a test replaces, as a reload does.
type swappable struct{ cur atomic.Pointer[FixedSystems] }

func (s *swappable) set(f FixedSystems)       { s.cur.Store(&f) }
func (s *swappable) Search(b string) []System { return s.cur.Load().Search(b) }
func (s *swappable) Integration(b string) (string, Scheduler) {
	return s.cur.Load().Integration(b)
}
func (s *swappable) SchedulerOf(name string) Scheduler { return s.cur.Load().SchedulerOf(name) }
func (s *swappable) MultiPractice() bool               { return false }

func TestSearch_AsksTheSystemsInForceAndNotAnAnswerOfOthers(t *testing.T) {
	var systems swappable
	systems.set(FixedSystems{Searched: []System{sys("a", ehrWith([]Patient{pat("1", "Smith", "A", "2000-01-01")}, nil))}})
	s := NewService(&systems, memCache(), Config{CacheTTL: time.Minute})
	if r, err := s.Search(caller("u"), SearchRequest{Query: "smith"}); err != nil || fmt.Sprint(r.Sources) != "[a]" {
		t.Fatalf("%+v %v", r, err)
	}

	systems.set(FixedSystems{Searched: []System{
		sys("a", ehrWith([]Patient{pat("1", "Smith", "A", "2000-01-01")}, nil)),
		sys("b", ehrWith([]Patient{pat("2", "Smith", "B", "2001-01-01")}, nil)),
	}})
	r, err := s.Search(caller("u"), SearchRequest{Query: "smith"})
	if err != nil || r.CacheHit || fmt.Sprint(r.Sources) != "[a b]" || r.TotalCount != 2 {
		t.Fatalf("after the swap: %+v %v; want both systems asked, not the cached answer of a", r, err)
	}
}

func TestSearch_KeepsTheSystemsItStartedWith(t *testing.T) {
	var systems swappable
	started, finish := make(chan struct{}), make(chan struct{})
	slow := &PatientSearcherMock{SearchPatientsFunc: func(context.Context, PatientQuery) ([]Patient, error) {
		close(started)
		<-finish
		return []Patient{pat("1", "Smith", "A", "2000-01-01")}, nil
	}}
	systems.set(FixedSystems{Searched: []System{sys("old", slow)}})
	s := NewService(&systems, memCache(), Config{})
	done := make(chan *SearchResult)
	go func() {
		r, _ := s.Search(caller("u"), SearchRequest{Query: "smith"})
		done <- r
	}()
	<-started
	systems.set(FixedSystems{Searched: []System{sys("new", ehrWith(nil, errors.New("not asked")))}})
	close(finish)
	if r := <-done; r == nil || fmt.Sprint(r.Sources) != "[old]" || r.TotalCount != 1 {
		t.Fatalf("%+v; want the answer of the system the search started with", r)
	}
}

func TestIntegration_WithoutSchedulerInForceIsNoIntegration(t *testing.T) {
	var systems swappable
	systems.set(FixedSystems{SchedulingEHR: newCalendar()})
	s := NewScheduling(&systems, nil, nil, nil, nil, nil, SchedulingConfig{})
	systems.set(FixedSystems{})
	if _, err := s.Agents(caller("u"), AgentFilter{}); !errors.Is(err, ErrNoSchedulingEHR) {
		t.Fatalf("err %v, want ErrNoIntegration once the reload removed the integration EHR", err)
	}
}
