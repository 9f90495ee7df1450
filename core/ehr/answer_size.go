package ehr

import "reflect"

// Size is about how many bytes a holds in memory: its structs and the
// bytes of its strings (strings shared between records are counted once
// per record). The in-process caches bound themselves by it, since one
// record answer can hold anything from a few records to some hundred
// thousand.
func (a Answer) Size() int {
	n := sizeAnswer
	for i := range a.Patients {
		n += patientSize(&a.Patients[i])
	}
	for _, set := range a.RecordSets {
		n += sizeSourceRecords + len(set.Source)
		for i := range set.Records {
			n += recordSize(&set.Records[i])
		}
	}
	for _, s := range a.Sources {
		n += sizeString + len(s)
	}
	return n
}

func patientSize(p *Patient) int {
	n := sizePatient + len(p.ID) + len(p.Source) + len(p.BirthDate) + len(p.Gender) +
		len(p.Name.Family) + len(p.Name.Text) + stringsSize(p.Name.Given) + stringsSize(p.Name.Suffix)
	for _, id := range p.Identifiers {
		n += sizeIdentifier + len(id.System) + len(id.Value) + len(id.Type)
	}
	for _, c := range p.Telecom {
		n += sizeContactPoint + len(c.System) + len(c.Value) + len(c.Use)
	}
	for _, a := range p.Address {
		n += sizeAddress + stringsSize(a.Line) + len(a.City) + len(a.State) + len(a.PostalCode) + len(a.Country)
	}
	return n
}

func recordSize(r *Record) int {
	n := sizeRecord + len(r.Type) + len(r.ID) + len(r.PatientID) + len(r.Date) + len(r.Status) + len(r.Text) +
		len(r.Code.System) + len(r.Code.Code) + len(r.Code.Display)
	if v := r.Value; v != nil {
		n += sizeRecordValue + len(v.String)
		if q := v.Quantity; q != nil {
			n += sizeQuantity + len(q.Value) + len(q.Unit)
		}
	}
	if a := r.Attachment; a != nil {
		n += sizeAttachment + len(a.ContentType) + len(a.Title) + 8
	}
	return n
}

func stringsSize(s []string) int {
	n := 0
	for _, v := range s {
		n += sizeString + len(v)
	}
	return n
}

// The sizes of the structs an answer is made of, read once.
var (
	sizeAnswer        = sizeOf[Answer]()
	sizeSourceRecords = sizeOf[SourceRecords]()
	sizeString        = sizeOf[string]()
	sizePatient       = sizeOf[Patient]()
	sizeIdentifier    = sizeOf[Identifier]()
	sizeContactPoint  = sizeOf[ContactPoint]()
	sizeAddress       = sizeOf[Address]()
	sizeRecord        = sizeOf[Record]()
	sizeRecordValue   = sizeOf[RecordValue]()
	sizeQuantity      = sizeOf[Quantity]()
	sizeAttachment    = sizeOf[Attachment]()
)

// sizeOf is the size of a T in memory.
func sizeOf[T any]() int { return int(reflect.TypeFor[T]().Size()) }
