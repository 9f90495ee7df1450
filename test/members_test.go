package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// members lists business id's members as sub sees them: subject → role.
func (s *server) members(t *testing.T, id, tok string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range s.bdo("GET", "/business/"+id+"/members", tok, nil).data(t, 200, "Members fetched successfully").([]any) {
		m := m.(map[string]any)
		if m["createdAt"] == nil {
			t.Fatalf("member without createdAt: %v", m)
		}
		out[m["subject"].(string)] = m["role"].(string)
	}
	return out
}

// wantRefused fails unless r is the error status with code.
func wantRefused(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status || r.errorCode(t) != code {
		t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
	}
}

func TestMembers_RolesDecideWhoChangesMembers(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	w.createBusiness("mallory") // a member elsewhere, not here
	owner, admin, staff, mal := w.token("owner"), w.token("admin"), w.token("staff"), otherTok(w)
	members := "/business/" + id + "/members"

	// The owner named at creation is the first owner; it adds an admin, the admin adds staff.
	if got := s.members(t, id, owner); len(got) != 1 || got["owner"] != "owner" {
		t.Fatalf("members at creation: %v", got)
	}
	m := s.bdo("POST", members, owner, map[string]string{"subject": "admin", "role": "admin"}).data(t, 201, "Member added successfully").(map[string]any)
	if m["subject"] != "admin" || m["role"] != "admin" || m["createdAt"] == nil || len(m) != 3 {
		t.Fatalf("added member: %v", m)
	}
	s.bdo("POST", members, admin, map[string]string{"subject": "staff", "role": "staff"}).data(t, 201, "Member added successfully")
	for _, tok := range []string{owner, admin, staff} {
		if got := s.members(t, id, tok); len(got) != 3 || got["owner"] != "owner" || got["admin"] != "admin" || got["staff"] != "staff" {
			t.Fatalf("members: %v", got)
		}
	}

	for what, c := range map[string]struct {
		r      response
		status int
		code   string
	}{
		"admin adds an admin":       {s.bdo("POST", members, admin, map[string]string{"subject": "x", "role": "admin"}), 403, "insufficient_role"},
		"admin adds an owner":       {s.bdo("POST", members, admin, map[string]string{"subject": "x", "role": "owner"}), 403, "insufficient_role"},
		"staff adds staff":          {s.bdo("POST", members, staff, map[string]string{"subject": "x", "role": "staff"}), 403, "insufficient_role"},
		"stranger adds":             {s.bdo("POST", members, mal, map[string]string{"subject": "mallory", "role": "owner"}), 404, "business_not_found"},
		"stranger lists":            {s.bdo("GET", members, mal, nil), 404, "business_not_found"},
		"existing member":           {s.bdo("POST", members, owner, map[string]string{"subject": "staff", "role": "admin"}), 409, "member_exists"},
		"unknown role":              {s.bdo("POST", members, owner, map[string]string{"subject": "x", "role": "superuser"}), 400, "invalid_role"},
		"role in capitals":          {s.bdo("POST", members, owner, map[string]string{"subject": "x", "role": "Staff"}), 400, "invalid_role"},
		"no subject":                {s.bdo("POST", members, owner, map[string]string{"role": "staff"}), 400, "validation_failed"},
		"unknown field":             {s.bdo("POST", members, owner, `{"subject":"x","role":"staff","admin":true}`), 400, "invalid_json"},
		"duplicate key":             {s.bdo("POST", members, owner, `{"subject":"x","role":"staff","role":"owner"}`), 400, "invalid_json"},
		"not a uuid":                {s.bdo("GET", "/business/nope/members", owner, nil), 400, "invalid_id"},
		"admin changes a role":      {s.bdo("PATCH", members+"/staff", admin, map[string]string{"role": "admin"}), 403, "insufficient_role"},
		"staff changes its role":    {s.bdo("PATCH", members+"/staff", staff, map[string]string{"role": "owner"}), 403, "insufficient_role"},
		"stranger changes a role":   {s.bdo("PATCH", members+"/staff", mal, map[string]string{"role": "admin"}), 404, "business_not_found"},
		"owner sets an unknown one": {s.bdo("PATCH", members+"/staff", owner, map[string]string{"role": "root"}), 400, "invalid_role"},
		"owner changes nobody":      {s.bdo("PATCH", members+"/nobody", owner, map[string]string{"role": "admin"}), 404, "member_not_found"},
		"last owner demoted":        {s.bdo("PATCH", members+"/owner", owner, map[string]string{"role": "admin"}), 409, "last_owner"},
		"last owner removed":        {s.bdo("DELETE", members+"/owner", owner, nil), 409, "last_owner"},
		"admin removes the owner":   {s.bdo("DELETE", members+"/owner", admin, nil), 403, "insufficient_role"},
		"admin removes itself":      {s.bdo("DELETE", members+"/admin", admin, nil), 403, "insufficient_role"},
		"staff removes itself":      {s.bdo("DELETE", members+"/staff", staff, nil), 403, "insufficient_role"},
		"stranger removes":          {s.bdo("DELETE", members+"/staff", mal, nil), 404, "business_not_found"},
		"owner removes nobody":      {s.bdo("DELETE", members+"/nobody", owner, nil), 404, "member_not_found"},
	} {
		wantRefused(t, what, c.r, c.status, c.code)
	}
	if got := s.members(t, id, owner); len(got) != 3 || got["owner"] != "owner" || got["admin"] != "admin" || got["staff"] != "staff" {
		t.Fatalf("a refused change changed the members: %v", got)
	}

	// Owners change roles; an admin removes staff; a second owner lets the first step down.
	u := s.bdo("PATCH", members+"/staff", owner, map[string]string{"role": "admin"}).data(t, 200, "Member updated successfully").(map[string]any)
	if u["subject"] != "staff" || u["role"] != "admin" {
		t.Fatalf("updated member: %v", u)
	}
	s.bdo("PATCH", members+"/staff", owner, map[string]string{"role": "staff"}).data(t, 200, "Member updated successfully")
	d := s.bdo("DELETE", members+"/staff", admin, nil).data(t, 200, "Member removed successfully").(map[string]any)
	if len(d) != 1 || d["subject"] != "staff" {
		t.Fatalf("removed: %v", d)
	}
	wantRefused(t, "a removed member lists", s.bdo("GET", members, staff, nil), 404, "business_not_found")
	wantRefused(t, "a removed member reads the business", s.bdo("GET", "/business/"+id, staff, nil), 404, "business_not_found")
	s.bdo("POST", members, owner, map[string]string{"subject": "owner2", "role": "owner"}).data(t, 201, "Member added successfully")
	s.bdo("PATCH", members+"/owner", w.token("owner2"), map[string]string{"role": "staff"}).data(t, 200, "Member updated successfully")
	wantRefused(t, "the former owner changes roles", s.bdo("PATCH", members+"/admin", owner, map[string]string{"role": "owner"}), 403, "insufficient_role")
	s.bdo("DELETE", members+"/owner", w.token("owner2"), nil).data(t, 200, "Member removed successfully")
	if got := s.members(t, id, admin); len(got) != 2 || got["owner2"] != "owner" || got["admin"] != "admin" {
		t.Fatalf("members at the end: %v", got)
	}
}

func TestMembers_StaffReadsTheBusinessButChangesNothing(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	owner, admin, staff := w.token("owner"), w.token("admin"), w.token("staff")
	s.bdo("POST", "/business/"+id+"/members", owner, map[string]string{"subject": "admin", "role": "admin"}).data(t, 201, "Member added successfully")
	s.bdo("POST", "/business/"+id+"/members", owner, map[string]string{"subject": "staff", "role": "staff"}).data(t, 201, "Member added successfully")

	// An admin changes what belongs to the business as the owner does.
	loc := int64(s.bdo("POST", "/business/location/"+id+"/", admin, locationForm(t, false, general, address, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64))
	s.bdo("PATCH", "/business/"+id, admin, `{"city":"Austin"}`).data(t, 200, "Business updated successfully")
	entry := int64(s.bdo("POST", "/business/operating-hours/add", admin, map[string]any{"businessLocationId": loc, "operatingHours": []map[string]string{{"day": "Monday", "start_time": "09:00", "end_time": "10:00"}}}).
		data(t, 201, "Operating hours added successfully").(map[string]any)["operatingHours"].([]any)[0].(map[string]any)["id"].(float64))

	// Staff reads all of it.
	if b := s.bdo("GET", "/business/"+id, staff, nil).data(t, 200, "Business Information fetched successfully").(map[string]any); b["city"] != "Austin" {
		t.Fatalf("staff reads the business: %v", b)
	}
	if ls := s.bdo("GET", "/business/locations/"+id, staff, nil).data(t, 200, "Business locations fetched successfully").([]any); len(ls) != 1 {
		t.Fatalf("staff reads %d locations", len(ls))
	}
	s.bdo("GET", fmt.Sprintf("/business/location/%d/providers", loc), staff, nil).data(t, 200, "Providers fetched successfully")
	if hs := s.bdo("GET", fmt.Sprintf("/business/location/%d/operating-hours", loc), staff, nil).data(t, 200, "Operating hours fetched successfully").([]any); len(hs) != 1 {
		t.Fatalf("staff reads %d hours", len(hs))
	}

	// ... and changes none of it.
	for what, r := range map[string]response{
		"PATCH business": s.bdo("PATCH", "/business/"+id, staff, `{"name":"staff was here"}`),
		"POST location":  s.bdo("POST", "/business/location/"+id+"/", staff, locationForm(t, false, map[string]string{"name": "X"}, nil, nil, "", "")),
		"PUT location":   s.bdo("PUT", fmt.Sprintf("/business/location/%d/update", loc), staff, locationForm(t, false, map[string]string{"name": "X"}, nil, nil, "", "")),
		"add hours":      s.bdo("POST", "/business/operating-hours/add", staff, map[string]any{"businessLocationId": loc, "operatingHours": []map[string]string{{"day": "Friday", "start_time": "09:00", "end_time": "10:00"}}}),
		"update hours":   s.bdo("PUT", "/business/operating-hours/update", staff, map[string]any{"id": entry, "day": "Friday", "start_time": "09:00", "end_time": "10:00"}),
		"delete hours":   s.bdo("DELETE", "/business/operating-hours/delete", staff, map[string]any{"id": entry}),
	} {
		wantRefused(t, what, r, 403, "insufficient_role")
	}
	if w.count("operating_hours") != 1 || w.count("business_locations") != 1 {
		t.Fatal("a refused request changed data")
	}
	if b := s.bdo("GET", "/business/"+id, owner, nil).data(t, 200, "Business Information fetched successfully").(map[string]any); b["name"] == "staff was here" {
		t.Fatal("staff renamed the business")
	}
}

func TestMembers_BlobsFollowTheRolesOfTheLocationsBusiness(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	id := w.createBusiness("owner")
	owner, admin, staff, mal := w.token("owner"), w.token("admin"), w.token("staff"), otherTok(w)
	s.bdo("POST", "/business/"+id+"/members", owner, map[string]string{"subject": "admin", "role": "admin"}).data(t, 201, "Member added successfully")
	s.bdo("POST", "/business/"+id+"/members", owner, map[string]string{"subject": "staff", "role": "staff"}).data(t, 201, "Member added successfully")
	loc := fmt.Sprint(int64(s.bdo("POST", "/business/location/"+id+"/", owner, locationForm(t, false, map[string]string{"name": "Main"}, nil, nil, "", "")).
		data(t, 201, "Complete business location created successfully").(map[string]any)["locationId"].(float64)))
	upload := func(tok, text string) int64 {
		t.Helper()
		r := s.upload(tok, fileFields("note.txt", "text/plain", []byte(text), field{"businessLocationId", loc})...)
		if r.status != 201 || r.json(t)["businessLocationId"] != loc {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		return int64(r.json(t)["id"].(float64))
	}

	// Any member uploads for the location; a stranger may not name it.
	byOwner, byStaff := upload(owner, "from the owner"), upload(staff, "from staff")
	wantRefused(t, "stranger uploads for the location", s.upload(mal, fileFields("note.txt", "text/plain", []byte("x"), field{"businessLocationId", loc})...), 404, "location_not_found")

	// Every member reads every file of the location; a stranger sees none.
	for _, tok := range []string{owner, admin, staff} {
		for _, blob := range []int64{byOwner, byStaff} {
			if r := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", blob), tok, nil); r.status != 200 {
				t.Errorf("member metadata %d: %d %s", blob, r.status, r.body)
			}
			if r := s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", blob), tok, nil); r.status != 200 {
				t.Errorf("member download %d: %d", blob, r.status)
			}
		}
	}
	for _, r := range []response{
		s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", byOwner), mal, nil),
		s.do("GET", fmt.Sprintf("/cloud-blob/download/%d", byOwner), mal, nil),
		s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", byOwner), mal, nil),
	} {
		wantRefused(t, "stranger", r, 404, "blob_not_found")
	}

	// Staff deletes only what it uploaded; an owner or admin deletes any file of the business.
	wantRefused(t, "staff deletes the owner's file", s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", byOwner), staff, nil), 403, "insufficient_role")
	if w.rows() != 2 {
		t.Fatal("a refused delete removed a row")
	}
	if r := s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", byStaff), staff, nil); r.status != 200 {
		t.Fatalf("staff deletes its own file: %d %s", r.status, r.body)
	}
	if r := s.do("DELETE", fmt.Sprintf("/cloud-blob/%d", byOwner), admin, nil); r.status != 200 {
		t.Fatalf("admin deletes the owner's file: %d %s", r.status, r.body)
	}
	if w.rows() != 0 {
		t.Fatalf("%d rows left", w.rows())
	}

	// A member removed loses the business's files (but keeps its own uploads elsewhere).
	mine := upload(staff, "staff again")
	s.bdo("DELETE", "/business/"+id+"/members/staff", admin, nil).data(t, 200, "Member removed successfully")
	byAdmin := upload(admin, "from the admin")
	wantRefused(t, "removed staff reads the admin's file", s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", byAdmin), staff, nil), 404, "blob_not_found")
	if r := s.do("GET", fmt.Sprintf("/cloud-blob/metadata/%d", mine), staff, nil); r.status != 200 {
		t.Fatalf("the uploader reads its own file: %d", r.status)
	}
}

func TestMembers_AdminCLICreatesTheFirstOwnerAndAddsMembers(t *testing.T) {
	w := newWorld(t)
	s := w.start(nil)
	out, code := carebridge(t, w.dbURL, "admin", "create-business", "--name", "CLI Clinic", "--email", "cli@example.com", "--owner", "owner")
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(out), &created); code != 0 || err != nil || created.ID == "" {
		t.Fatalf("create-business: exit %d %q", code, out)
	}
	id := created.ID
	if got := s.members(t, id, w.token("owner")); len(got) != 1 || got["owner"] != "owner" {
		t.Fatalf("create-business --owner did not make its first owner: %v", got)
	}
	out, code = carebridge(t, w.dbURL, "admin", "add-member", "--business", id, "--sub", "cli-admin", "--role", "admin")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || m["businessId"] != id || m["subject"] != "cli-admin" || m["role"] != "admin" || m["createdAt"] == nil {
		t.Fatalf("add-member: exit %d %q", code, out)
	}
	if got := s.members(t, id, w.token("cli-admin")); got["cli-admin"] != "admin" || got["owner"] != "owner" {
		t.Fatalf("members: %v", got)
	}
	for _, args := range [][]string{
		{"--business", id, "--sub", "x", "--role", "boss"},
		{"--business", id, "--sub", "cli-admin", "--role", "staff"},
		{"--business", "6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "--sub", "x", "--role", "staff"},
		{"--business", id, "--role", "staff"},
	} {
		if out, code := carebridge(t, w.dbURL, append([]string{"admin", "add-member"}, args...)...); code == 0 || strings.TrimSpace(out) != "" {
			t.Errorf("add-member %v: exit %d %q, want a failure", args, code, out)
		}
	}
	if got := s.members(t, id, w.token("owner")); len(got) != 2 {
		t.Fatalf("a refused add-member changed the members: %v", got)
	}
}
