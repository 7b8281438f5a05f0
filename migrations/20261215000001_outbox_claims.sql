-- The outbox relay claims rows with a lease instead of locking them in a transaction held open
-- across its publication. A broker whose acknowledgements took longer than the session's
-- idle_in_transaction_session_timeout (DB_STATEMENT_TIMEOUT_MS) killed that session every pass:
-- nothing was ever marked sent and the same events were published for ever. Now a pass claims
-- rows in one short statement (claimed_until, claim_token), publishes with no transaction open,
-- then settles its claim by token: acknowledged rows sent, the others released. A claim whose
-- relay died runs out at claimed_until and the rows are claimed again (JetStream drops the
-- second copy by Nats-Msg-Id).

ALTER TABLE order_outbox
    ADD COLUMN claimed_until TIMESTAMPTZ,
    ADD COLUMN claim_token   TEXT;

-- The settlement's look-up: only rows under a claim.
CREATE INDEX order_outbox_claim_idx ON order_outbox (claim_token) WHERE claim_token IS NOT NULL;
