package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

var errWrongUserType = &core.Error{Kind: core.KindForbidden, Code: "forbidden_user_type", Message: "Business endpoints need the header user-type: business"}

// businessUser admits only requests with the header user-type: business.
func (s *Server) businessUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(strings.TrimSpace(r.Header.Get("User-Type")), "business") {
			s.writeError(w, r, errWrongUserType)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) businessRoutes(r *mux.Router) {
	b := r.PathPrefix("/business").Subrouter()
	b.Use(s.authenticate, s.businessUser)
	b.HandleFunc("/{id}", s.getBusiness).Methods(http.MethodGet)
	b.HandleFunc("/locations/{id}", s.listLocations).Methods(http.MethodGet)
	b.HandleFunc("/location/{businessId}/", s.createLocation).Methods(http.MethodPost)
	b.HandleFunc("/location/{businessId}", s.createLocation).Methods(http.MethodPost)
	b.HandleFunc("/location/{locationId}/update", s.updateLocation).Methods(http.MethodPut)
	b.HandleFunc("/location/{locationId}/providers", s.listProviders).Methods(http.MethodGet)
	b.HandleFunc("/location/{locationId}/operating-hours", s.listHours).Methods(http.MethodGet)
	b.HandleFunc("/operating-hours/add", s.addHours).Methods(http.MethodPost)
	b.HandleFunc("/operating-hours/update", s.updateHours).Methods(http.MethodPut)
	b.HandleFunc("/operating-hours/delete", s.deleteHours).Methods(http.MethodDelete)
	b.HandleFunc("/{id}", s.editBusiness).Methods(http.MethodPatch)
	b.HandleFunc("/{id}/members", s.listMembers).Methods(http.MethodGet)
	b.HandleFunc("/{id}/members", s.addMember).Methods(http.MethodPost)
	b.HandleFunc("/{id}/members/{subject}", s.changeMember).Methods(http.MethodPatch)
	b.HandleFunc("/{id}/members/{subject}", s.removeMember).Methods(http.MethodDelete)
}

// businessResponse is a business as clients see it; empty optional fields
// are null.
type businessResponse struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Email         string    `json:"email"`
	NPILicense    *string   `json:"npiLicense"`
	TaxID         *string   `json:"taxId"`
	Website       *string   `json:"website"`
	Description   *string   `json:"description"`
	Address       *string   `json:"address"`
	City          *string   `json:"city"`
	State         *string   `json:"state"`
	ZipCode       *string   `json:"zipCode"`
	TwitterLink   *string   `json:"twitterLink"`
	InstagramLink *string   `json:"instagramLink"`
	YoutubeLink   *string   `json:"youtubeLink"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

func newBusinessResponse(b business.Business) businessResponse {
	return businessResponse{
		ID: b.ID, Name: b.Name, Email: b.Email, NPILicense: optional(b.NPILicense), TaxID: optional(b.TaxID),
		Website: optional(b.Website), Description: optional(b.Description), Address: optional(b.Address),
		City: optional(b.City), State: optional(b.State), ZipCode: optional(b.ZipCode),
		TwitterLink: optional(b.TwitterLink), InstagramLink: optional(b.InstagramLink), YoutubeLink: optional(b.YoutubeLink),
		CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC(),
	}
}

type locationResponse struct {
	ID             int64     `json:"id"`
	BusinessID     string    `json:"businessId"`
	Name           string    `json:"name"`
	Timezone       *string   `json:"timezone"`
	NPI            *string   `json:"npi"`
	TaxID          *string   `json:"taxId"`
	StateLicense   *string   `json:"stateLicense"`
	Phone          *string   `json:"phone"`
	Fax            *string   `json:"fax"`
	Email          *string   `json:"email"`
	Website        *string   `json:"website"`
	AdminName      *string   `json:"adminName"`
	AdminFirstName *string   `json:"adminFirstName"`
	AdminLastName  *string   `json:"adminLastName"`
	AdminPhone     *string   `json:"adminPhone"`
	AdminEmail     *string   `json:"adminEmail"`
	Address        *string   `json:"address"`
	City           *string   `json:"city"`
	State          *string   `json:"state"`
	ZipCode        *string   `json:"zipCode"`
	Country        *string   `json:"country"`
	Suite          *string   `json:"suite"`
	LogoBlobID     *int64    `json:"logoBlobId"`
	IsComplete     bool      `json:"isComplete"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func newLocationResponse(l business.Location) locationResponse {
	return locationResponse{
		ID: l.ID, BusinessID: l.BusinessID, Name: l.Name, Timezone: optional(l.Timezone), NPI: optional(l.NPI),
		TaxID: optional(l.TaxID), StateLicense: optional(l.StateLicense), Phone: optional(l.Phone), Fax: optional(l.Fax),
		Email: optional(l.Email), Website: optional(l.Website), AdminName: optional(l.AdminName),
		AdminFirstName: optional(l.AdminFirstName), AdminLastName: optional(l.AdminLastName),
		AdminPhone: optional(l.AdminPhone), AdminEmail: optional(l.AdminEmail), Address: optional(l.Address),
		City: optional(l.City), State: optional(l.State), ZipCode: optional(l.ZipCode), Country: optional(l.Country),
		Suite: optional(l.Suite), LogoBlobID: optionalID(l.LogoBlobID), IsComplete: l.IsComplete(),
		CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(),
	}
}

func optionalID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

type providerResponse struct {
	ID             int64   `json:"id"`
	FirstName      string  `json:"firstName"`
	LastName       string  `json:"lastName"`
	Email          string  `json:"email"`
	TelehealthLink *string `json:"telehealthLink"`
}

// hoursResponse is an operating-hours entry; the spec names its times in
// snake case.
type hoursResponse struct {
	ID                 int64  `json:"id"`
	BusinessLocationID int64  `json:"businessLocationId"`
	Day                string `json:"day"`
	StartTime          string `json:"start_time"`
	EndTime            string `json:"end_time"`
}

func newHoursResponses(hs []business.Hours) []hoursResponse {
	out := make([]hoursResponse, len(hs))
	for i, h := range hs {
		out[i] = hoursResponse{ID: h.ID, BusinessLocationID: h.LocationID, Day: h.Day.String(), StartTime: h.Start, EndTime: h.End}
	}
	return out
}

func pathInt(r *http.Request, name string) (int64, error) {
	id, err := strconv.ParseInt(mux.Vars(r)[name], 10, 64)
	if err != nil || id <= 0 {
		return 0, errInvalidID.WithMessage("%s must be a positive integer", name)
	}
	return id, nil
}

func (s *Server) getBusiness(w http.ResponseWriter, r *http.Request) {
	b, err := s.business.Business(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Business Information fetched successfully", newBusinessResponse(b))
}

// editBusinessRequest is the EditBusinessDto.
type editBusinessRequest struct {
	Name          *string `json:"name"`
	Email         *string `json:"email"`
	NPILicense    *string `json:"npiLicense"`
	TaxID         *string `json:"taxId"`
	Website       *string `json:"website"`
	Description   *string `json:"description"`
	Address       *string `json:"address"`
	City          *string `json:"city"`
	State         *string `json:"state"`
	ZipCode       *string `json:"zipCode"`
	TwitterLink   *string `json:"twitterLink"`
	InstagramLink *string `json:"instagramLink"`
	YoutubeLink   *string `json:"youtubeLink"`
}

func (s *Server) editBusiness(w http.ResponseWriter, r *http.Request) {
	var req editBusinessRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.business.EditBusiness(r.Context(), mux.Vars(r)["id"], business.BusinessEdit(req))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Business updated successfully", map[string]string{"id": b.ID, "name": b.Name})
}

func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) {
	ls, err := s.business.Locations(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]locationResponse, len(ls))
	for i, l := range ls {
		out[i] = newLocationResponse(l)
	}
	writeSuccess(w, http.StatusOK, "Business locations fetched successfully", out)
}

// createLocation checks the caller's role before it reads the form: a
// stranger's or a staff member's body, logo included, is never read.
func (s *Server) createLocation(w http.ResponseWriter, r *http.Request) {
	businessID := mux.Vars(r)["businessId"]
	if err := s.business.AuthorizeLocationCreate(r.Context(), businessID); err != nil {
		refuseUnread(w)
		s.writeError(w, r, err)
		return
	}
	in, logo, err := s.readLocationForm(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.business.CreateLocation(r.Context(), businessID, in, logo)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusCreated, "Complete business location created successfully", map[string]any{
		"locationId": l.ID, "isComplete": l.IsComplete(), "logoBlobId": optionalID(l.LogoBlobID),
	})
}

// refuseUnread makes the answer to a request whose body is refused unread
// close the connection: net/http would otherwise read up to 256 KiB more
// of the body (all of a chunked one's, as slowly as it comes) before it
// answers, to keep the connection.
func refuseUnread(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// updateLocation checks the caller's role before it reads the form, as
// createLocation does.
func (s *Server) updateLocation(w http.ResponseWriter, r *http.Request) {
	id, err := pathInt(r, "locationId")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.business.AuthorizeLocationUpdate(r.Context(), id); err != nil {
		refuseUnread(w)
		s.writeError(w, r, err)
		return
	}
	in, logo, err := s.readLocationForm(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.business.UpdateLocation(r.Context(), id, in, logo)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Business location updated successfully", map[string]any{
		"id": l.ID, "name": l.Name, "isComplete": l.IsComplete(), "logoBlobId": optionalID(l.LogoBlobID),
	})
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	id, err := pathInt(r, "locationId")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ps, err := s.business.Providers(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]providerResponse, len(ps))
	for i, p := range ps {
		out[i] = providerResponse{ID: p.ID, FirstName: p.FirstName, LastName: p.LastName, Email: p.Email, TelehealthLink: optional(p.TelehealthLink)}
	}
	writeSuccess(w, http.StatusOK, "Providers fetched successfully", map[string]any{"providers": out})
}

func (s *Server) listHours(w http.ResponseWriter, r *http.Request) {
	id, err := pathInt(r, "locationId")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hs, err := s.business.Hours(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Operating hours fetched successfully", newHoursResponses(hs))
}

// hoursEntry is one entry of a request; fields are pointers so a missing
// one is told from an empty one.
type hoursEntry struct {
	Day       *string `json:"day"`
	StartTime *string `json:"start_time"`
	EndTime   *string `json:"end_time"`
}

func (e hoursEntry) input(prefix string) (business.HoursInput, error) {
	var missing []string
	for _, f := range []struct {
		name  string
		value *string
	}{{"day", e.Day}, {"start_time", e.StartTime}, {"end_time", e.EndTime}} {
		if f.value == nil {
			missing = append(missing, prefix+f.name)
		}
	}
	if len(missing) > 0 {
		return business.HoursInput{}, business.ErrInvalid.WithMessage("Validation failed: %s is required", strings.Join(missing, ", "))
	}
	return business.HoursInput{Day: *e.Day, Start: *e.StartTime, End: *e.EndTime}, nil
}

var errMissingLocationID = business.ErrInvalid.WithMessage("Validation failed: businessLocationId is required")

func (s *Server) addHours(w http.ResponseWriter, r *http.Request) {
	var req struct {
		BusinessLocationID *int64       `json:"businessLocationId"`
		OperatingHours     []hoursEntry `json:"operatingHours"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.BusinessLocationID == nil {
		s.writeError(w, r, errMissingLocationID)
		return
	}
	in := make([]business.HoursInput, len(req.OperatingHours))
	for i, e := range req.OperatingHours {
		var err error
		if in[i], err = e.input("operatingHours[" + strconv.Itoa(i) + "]."); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	hs, err := s.business.AddHours(r.Context(), *req.BusinessLocationID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusCreated, "Operating hours added successfully", map[string]any{
		"businessLocationId": *req.BusinessLocationID, "addedCount": len(hs), "operatingHours": newHoursResponses(hs),
	})
}

func (s *Server) updateHours(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID *int64 `json:"id"`
		hoursEntry
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.ID == nil {
		s.writeError(w, r, business.ErrInvalid.WithMessage("Validation failed: id is required"))
		return
	}
	in, err := req.input("")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, err := s.business.UpdateHours(r.Context(), *req.ID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Operating hours updated successfully", newHoursResponses([]business.Hours{h})[0])
}

func (s *Server) deleteHours(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID *int64 `json:"id"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.ID == nil {
		s.writeError(w, r, business.ErrInvalid.WithMessage("Validation failed: id is required"))
		return
	}
	if err := s.business.DeleteHours(r.Context(), *req.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Operating hours deleted successfully", map[string]int64{"id": *req.ID})
}
