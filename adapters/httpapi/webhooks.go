package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/event"
)

// webhookRoutes are /api/v1/webhooks (the contract's "Webhooks a practice
// manages itself"): bare answers, as person links', never cached (a new
// secret is in one). They act for the acting business, resolved as for
// person links; the use case lets its owners and admins through. Each
// change is audited (webhook.*) and commits its event with itself; the
// reads are not audited.
func (s *Server) webhookRoutes(r *mux.Router) {
	change := func(action audit.Action, h actingHandler) http.Handler {
		return noStore(s.audited(action, "webhook", s.acting(ehr.UseWebhooks, h)))
	}
	read := func(h actingHandler) http.Handler {
		return noStore(s.authenticate(s.acting(ehr.UseWebhooks, h)))
	}
	const one = "/api/v1/webhooks/{id}"
	r.Handle("/api/v1/webhooks", change(audit.WebhookCreate, s.createWebhook)).Methods(http.MethodPost)
	r.Handle("/api/v1/webhooks", read(s.listWebhooks)).Methods(http.MethodGet)
	r.Handle(one, read(s.getWebhook)).Methods(http.MethodGet)
	r.Handle(one, change(audit.WebhookUpdate, s.updateWebhook)).Methods(http.MethodPatch)
	r.Handle(one, change(audit.WebhookDelete, s.deleteWebhook)).Methods(http.MethodDelete)
	r.Handle(one+"/rotate-secret", change(audit.WebhookRotateSecret, s.rotateWebhookSecret)).Methods(http.MethodPost)
	r.Handle(one+"/deliveries", read(s.webhookDeliveries)).Methods(http.MethodGet)
	r.Handle(one+"/deliveries/{deliveryId}/retry", change(audit.WebhookRetry, s.retryDelivery)).Methods(http.MethodPost)
	r.Handle(one+"/replay", change(audit.WebhookReplay, s.replayWebhook)).Methods(http.MethodPost)
	r.Handle(one+"/test", change(audit.WebhookTest, s.testWebhook)).Methods(http.MethodPost)
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, business string) {
	var req webhookRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, err := s.auditWithChange(r, http.StatusCreated)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.webhooks.Create(ctx, event.NewWebhook{Business: business, URL: req.URL, Types: req.Events, Description: req.Description})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditResource(r.Context(), c.ID)
	out := newWebhookResponse(c.Subscription)
	out.Secret = c.SecretText
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, business string) {
	p, err := webhookPage(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.webhooks.List(r.Context(), business, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookPage(page, newWebhookResponse))
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, business string) {
	sub, err := s.webhooks.Get(r.Context(), business, pathUUID(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookResponse(sub))
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	var req webhookPatch
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, err := s.auditWithChange(r, http.StatusOK)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e := event.WebhookEdit{URL: req.URL, Description: req.Description, Enabled: req.Enabled}
	if req.Events != nil {
		e.Types = *req.Events
	}
	sub, err := s.webhooks.Update(ctx, business, id, e)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookResponse(sub))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	ctx, err := s.auditWithChange(r, http.StatusNoContent)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.webhooks.Delete(ctx, business, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	ctx, err := s.auditWithChange(r, http.StatusOK)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	secret, err := s.webhooks.RotateSecret(ctx, business, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, secretResponse{Secret: secret})
}

// deliveryStates maps the contract's status filter to the stored states.
var deliveryStates = map[string]event.State{"pending": event.Pending, "succeeded": event.Delivered, "failed": event.Failed}

func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	v := r.URL.Query()
	p, err := webhookPage(v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var state event.State
	if v.Has("status") {
		var ok bool
		if state, ok = deliveryStates[v.Get("status")]; !ok {
			s.writeError(w, r, event.ErrInvalidWebhook.WithMessage("Validation failed: status must be one of pending, succeeded, failed"))
			return
		}
	}
	page, err := s.webhooks.Deliveries(r.Context(), business, id, state, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookPage(page, newDeliveryResponse))
}

func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	delivery, err := strconv.ParseInt(mux.Vars(r)["deliveryId"], 10, 64)
	if err != nil || delivery < 1 {
		s.writeError(w, r, event.ErrDeliveryNotFound)
		return
	}
	auditDetail(r.Context(), map[string]any{"deliveryId": delivery})
	ctx, err := s.auditWithChange(r, http.StatusAccepted)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.webhooks.Retry(ctx, business, id, delivery); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, acceptedResponse{Queued: 1})
}

func (s *Server) replayWebhook(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	var req replayRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	since, err1 := time.Parse(time.RFC3339, req.Since)
	until, err2 := time.Parse(time.RFC3339, req.Until)
	if err1 != nil || err2 != nil {
		s.writeError(w, r, event.ErrInvalidWebhook.WithMessage("Validation failed: since and until must be RFC 3339 times"))
		return
	}
	ctx, err := s.auditWithChange(r, http.StatusAccepted)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.webhooks.Replay(ctx, business, id, since, until)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, acceptedResponse{Queued: n})
}

func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	ctx, err := s.auditWithChange(r, http.StatusAccepted)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.webhooks.Test(ctx, business, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, testResponse{Queued: 1, EventID: e.ID})
}

// webhookPage reads page and limit: absent is the default; present, each
// must be a whole number of at least 1 (the core checks the maximum).
func webhookPage(v url.Values) (event.PageRequest, error) {
	q := &query{v: v}
	p := event.PageRequest{Page: q.int("page"), Limit: q.int("limit")}
	if len(q.errs) == 0 && ((v.Has("page") && p.Page < 1) || (v.Has("limit") && p.Limit < 1)) {
		q.errs = append(q.errs, "page and limit must be at least 1")
	}
	if len(q.errs) > 0 {
		return p, event.ErrInvalidWebhook.WithMessage("Validation failed: %s", strings.Join(q.errs, "; "))
	}
	return p, nil
}
