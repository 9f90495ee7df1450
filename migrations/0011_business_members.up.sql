-- Practices (core/business members): a business has members, each a subject
-- with a role. Membership alone decides access; businesses.owner_subject is
-- kept as the subject named owner at creation (older instances still write
-- it during a rolling upgrade) and decides nothing.
CREATE TABLE business_members (
    business_id uuid        NOT NULL REFERENCES businesses (id) ON DELETE CASCADE,
    subject     text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('owner', 'admin', 'staff')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, subject)
);

-- "Which businesses is this caller a member of?"
CREATE INDEX business_members_subject ON business_members (subject);

-- Every existing owner becomes its business's first owner member.
INSERT INTO business_members (business_id, subject, role, created_at)
SELECT id, owner_subject, 'owner', created_at FROM businesses;

-- The subject named owner when a business is created becomes its first
-- owner member, in the same transaction, whichever code inserts the row.
CREATE FUNCTION business_first_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO business_members (business_id, subject, role, created_at)
    VALUES (NEW.id, NEW.owner_subject, 'owner', NEW.created_at)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER businesses_first_owner AFTER INSERT ON businesses
    FOR EACH ROW EXECUTE FUNCTION business_first_owner();

-- A business never loses its last owner (removed or demoted), whoever
-- writes; deleting the business itself takes its members with it. Writers
-- that change members lock the business row first (FOR UPDATE), so two
-- concurrent changes are checked one after the other; this trigger is the
-- backstop for any other writer.
CREATE FUNCTION business_keeps_an_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.role = 'owner'
       AND EXISTS (SELECT 1 FROM businesses WHERE id = OLD.business_id)
       AND NOT EXISTS (SELECT 1 FROM business_members
                       WHERE business_id = OLD.business_id AND role = 'owner') THEN
        RAISE EXCEPTION 'business % would have no owner', OLD.business_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'business_members_last_owner';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER business_members_keep_an_owner AFTER UPDATE OF role OR DELETE ON business_members
    FOR EACH ROW EXECUTE FUNCTION business_keeps_an_owner();

DROP INDEX businesses_owner_subject;
