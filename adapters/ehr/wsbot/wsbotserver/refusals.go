package wsbotserver

// SetRefusal makes the bot answer every request of action with the error
// code and message given, doing nothing (a refusal of the EHR's own, its
// words free text); an empty code removes it.
func (s *Server) SetRefusal(action, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.refusals, action)
		return
	}
	if s.refusals == nil {
		s.refusals = make(map[string]*protoError)
	}
	s.refusals[action] = &protoError{Code: code, Message: message}
}

// refusal is the refusal SetRefusal set for action, or nil.
func (s *Server) refusal(action string) *protoError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.refusals[action]; ok {
		c := *e
		return &c
	}
	return nil
}

// AppointmentStatus is the stored status of appointment id; false when the
// bot has none.
func (s *Server) AppointmentStatus(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.appts[id]; ok {
		return a.status, true
	}
	return "", false
}
