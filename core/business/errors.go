package business

import "github.com/carebridge/carebridge/core"

// The failures of the business core, declared once.
var (
	ErrBusinessNotFound = &core.Error{Kind: core.KindNotFound, Code: "business_not_found", Message: "Business not found"}
	ErrLocationNotFound = &core.Error{Kind: core.KindNotFound, Code: "location_not_found", Message: "Business location not found"}
	ErrHoursNotFound    = &core.Error{Kind: core.KindNotFound, Code: "operating_hours_not_found", Message: "Operating hours entry not found"}
	ErrDuplicateDay     = &core.Error{Kind: core.KindConflict, Code: "duplicate_day", Message: "The location already has operating hours for that day"}
	ErrDayConflict      = &core.Error{Kind: core.KindConflict, Code: "day_conflict", Message: "Another entry of the location already has that day"}
	ErrInvalid          = &core.Error{Kind: core.KindInvalid, Code: "validation_failed", Message: "Validation failed"}
	ErrInvalidLogo      = &core.Error{Kind: core.KindInvalid, Code: "invalid_logo", Message: "The logo must be an image"}
)
