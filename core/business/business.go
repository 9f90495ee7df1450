// Package business is the business-management core: businesses, their
// locations, the providers affiliated with a location, and weekly operating
// hours, with the membership rule: a caller reaches only the businesses it
// is a member of, and its role (owner, admin, staff) says what it may change. It imports only the standard library and core.
package business

import "time"

// Business is a practice; its members (Member) decide who reaches it.
type Business struct {
	ID string // UUID
	// OwnerSubject is the subject named owner at creation, which made it
	// the first owner member; it decides no access.
	OwnerSubject  string
	Name          string
	Email         string
	NPILicense    string
	TaxID         string
	Website       string
	Description   string
	Address       string
	City          string
	State         string
	ZipCode       string
	TwitterLink   string
	InstagramLink string
	YoutubeLink   string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// BusinessEdit is a partial update (EditBusinessDto): nil fields are left
// as they are; a non-nil empty string clears an optional field.
type BusinessEdit struct {
	Name, Email, NPILicense, TaxID, Website, Description, Address, City, State,
	ZipCode, TwitterLink, InstagramLink, YoutubeLink *string
}

// Location is one site of a business.
type Location struct {
	ID             int64
	BusinessID     string
	Name           string
	Timezone       string
	NPI            string
	TaxID          string
	StateLicense   string
	Phone          string
	Fax            string
	Email          string
	Website        string
	AdminName      string
	AdminFirstName string
	AdminLastName  string
	AdminPhone     string
	AdminEmail     string
	Address        string
	City           string
	State          string
	ZipCode        string
	Country        string
	Suite          string
	LogoBlobID     int64 // 0: no logo
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// IsComplete reports whether every field a complete location needs is set.
func (l Location) IsComplete() bool {
	for _, v := range []string{l.Name, l.Timezone, l.Phone, l.Email, l.Address, l.City, l.State, l.ZipCode, l.Country} {
		if v == "" {
			return false
		}
	}
	return true
}

// LocationInput is the CompleteBusinessLocationDto: the generalInfo and
// address groups. For a create, nil fields are empty; for an update, nil
// fields are left as they are.
type LocationInput struct {
	// generalInfo
	Name, Timezone, NPI, TaxID, StateLicense, Phone, Fax, Email, Website,
	AdminName, AdminPhone, AdminEmail *string
	// address
	Address, City, State, ZipCode, Country, Suite *string
}

// Logo is an image uploaded with a location. Body holds at most
// MaxLogoBytes.
type Logo struct {
	Filename    string
	ContentType string
	Size        int64
	Body        []byte
}

// MaxLogoBytes bounds a location's logo.
const MaxLogoBytes = 5 << 20

// Provider is a clinician affiliated with one or more locations.
type Provider struct {
	ID             int64
	FirstName      string
	LastName       string
	Email          string
	TelehealthLink string
}

// Hours is one operating-hours entry: a location is open on Day from Start
// to End (local time of the location, HH:MM, 24-hour).
type Hours struct {
	ID         int64
	LocationID int64
	Day        time.Weekday
	Start      string
	End        string
}
