package business

import (
	"strings"

	"github.com/carebridge/carebridge/core"
)

func trim(v *string) *string {
	if v == nil {
		return nil
	}
	t := strings.TrimSpace(*v)
	return &t
}

func upper(v *string) *string {
	if v == nil {
		return nil
	}
	u := strings.ToUpper(*v)
	return &u
}

func set(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func anything(string) bool { return true }

func (e BusinessEdit) trimmed() BusinessEdit {
	return BusinessEdit{
		Name: trim(e.Name), Email: trim(e.Email), NPILicense: trim(e.NPILicense), TaxID: trim(e.TaxID),
		Website: trim(e.Website), Description: trim(e.Description), Address: trim(e.Address), City: trim(e.City),
		State: upper(trim(e.State)), ZipCode: trim(e.ZipCode), TwitterLink: trim(e.TwitterLink),
		InstagramLink: trim(e.InstagramLink), YoutubeLink: trim(e.YoutubeLink),
	}
}

func (e BusinessEdit) validate() error {
	var p problems
	p.check("name", e.Name, true, anything, "")
	p.text("name", e.Name, 200)
	p.check("email", e.Email, true, core.ValidEmail, "must be a valid e-mail address")
	p.check("npiLicense", e.NPILicense, false, ValidNPI, "must be a 10-digit NPI with a valid check digit")
	p.check("taxId", e.TaxID, false, ValidEIN, "must be an EIN NN-NNNNNNN")
	p.check("website", e.Website, false, ValidURL, "must be an http(s) URL")
	p.text("description", e.Description, 2000)
	p.text("address", e.Address, 200)
	p.text("city", e.City, 100)
	p.check("state", e.State, false, ValidState, "must be a two-letter US state code")
	p.check("zipCode", e.ZipCode, false, ValidZIP, "must be a US ZIP code NNNNN or NNNNN-NNNN")
	p.check("twitterLink", e.TwitterLink, false, ValidURL, "must be an http(s) URL")
	p.check("instagramLink", e.InstagramLink, false, ValidURL, "must be an http(s) URL")
	p.check("youtubeLink", e.YoutubeLink, false, ValidURL, "must be an http(s) URL")
	return p.err()
}

func (e BusinessEdit) apply(b *Business) {
	set(&b.Name, e.Name)
	set(&b.Email, e.Email)
	set(&b.NPILicense, e.NPILicense)
	set(&b.TaxID, e.TaxID)
	set(&b.Website, e.Website)
	set(&b.Description, e.Description)
	set(&b.Address, e.Address)
	set(&b.City, e.City)
	set(&b.State, e.State)
	set(&b.ZipCode, e.ZipCode)
	set(&b.TwitterLink, e.TwitterLink)
	set(&b.InstagramLink, e.InstagramLink)
	set(&b.YoutubeLink, e.YoutubeLink)
}

func (in LocationInput) trimmed() LocationInput {
	return LocationInput{
		Name: trim(in.Name), Timezone: trim(in.Timezone), NPI: trim(in.NPI), TaxID: trim(in.TaxID),
		StateLicense: trim(in.StateLicense), Phone: trim(in.Phone), Fax: trim(in.Fax), Email: trim(in.Email),
		Website: trim(in.Website), AdminName: trim(in.AdminName), AdminPhone: trim(in.AdminPhone),
		AdminEmail: trim(in.AdminEmail), Address: trim(in.Address), City: trim(in.City),
		State: upper(trim(in.State)), ZipCode: trim(in.ZipCode), Country: trim(in.Country), Suite: trim(in.Suite),
	}
}

// validate checks the input; a create needs a name.
func (in LocationInput) validate(create bool) error {
	var p problems
	name := in.Name
	if create && name == nil {
		name = new(string)
	}
	p.check("generalInfo.name", name, true, anything, "")
	p.text("generalInfo.name", in.Name, 200)
	p.check("generalInfo.timezone", in.Timezone, false, ValidTimezone, "must be an IANA time zone such as America/Chicago")
	p.check("generalInfo.npi", in.NPI, false, ValidNPI, "must be a 10-digit NPI with a valid check digit")
	p.check("generalInfo.taxId", in.TaxID, false, ValidEIN, "must be an EIN NN-NNNNNNN")
	p.text("generalInfo.stateLicense", in.StateLicense, 50)
	p.check("generalInfo.phone", in.Phone, false, core.ValidPhone, "must be a phone number")
	p.check("generalInfo.fax", in.Fax, false, core.ValidPhone, "must be a phone number")
	p.check("generalInfo.email", in.Email, false, core.ValidEmail, "must be a valid e-mail address")
	p.check("generalInfo.website", in.Website, false, ValidURL, "must be an http(s) URL")
	p.text("generalInfo.adminName", in.AdminName, 200)
	p.check("generalInfo.adminPhone", in.AdminPhone, false, core.ValidPhone, "must be a phone number")
	p.check("generalInfo.adminEmail", in.AdminEmail, false, core.ValidEmail, "must be a valid e-mail address")
	p.text("address.address", in.Address, 200)
	p.text("address.city", in.City, 100)
	p.check("address.state", in.State, false, ValidState, "must be a two-letter US state code")
	p.check("address.zipCode", in.ZipCode, false, ValidZIP, "must be a US ZIP code NNNNN or NNNNN-NNNN")
	p.text("address.country", in.Country, 100)
	p.text("address.suite", in.Suite, 50)
	return p.err()
}

func (in LocationInput) apply(l *Location) {
	set(&l.Name, in.Name)
	set(&l.Timezone, in.Timezone)
	set(&l.NPI, in.NPI)
	set(&l.TaxID, in.TaxID)
	set(&l.StateLicense, in.StateLicense)
	set(&l.Phone, in.Phone)
	set(&l.Fax, in.Fax)
	set(&l.Email, in.Email)
	set(&l.Website, in.Website)
	set(&l.AdminPhone, in.AdminPhone)
	set(&l.AdminEmail, in.AdminEmail)
	set(&l.Address, in.Address)
	set(&l.City, in.City)
	set(&l.State, in.State)
	set(&l.ZipCode, in.ZipCode)
	set(&l.Country, in.Country)
	set(&l.Suite, in.Suite)
	if in.AdminName != nil {
		l.AdminName = *in.AdminName
		l.AdminFirstName, l.AdminLastName = ParseAdminName(l.AdminName)
	}
}
