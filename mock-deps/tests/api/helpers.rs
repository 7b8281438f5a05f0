use std::time::{Duration, Instant};

use mock_deps::{Ledger, MockConfig, MockDeps, Stats};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

/// A running mock plus a client pointed at it: one method per endpoint.
pub struct TestMock {
    pub mock: MockDeps,
    pub client: reqwest::Client,
    pub url: String,
}

impl TestMock {
    pub async fn start(config: MockConfig) -> Self {
        let mock = MockDeps::spawn(config).await.expect("mock-deps starts");
        let url = mock.base_url();
        Self {
            mock,
            client: reqwest::Client::new(),
            url,
        }
    }

    pub async fn instant() -> Self {
        Self::start(MockConfig::instant()).await
    }

    pub async fn seller(&self, authorization: Option<&str>) -> Response {
        let mut req = self
            .client
            .get(format!("{}/sellers/authorization", self.url));
        if let Some(value) = authorization {
            req = req.header("Authorization", value);
        }
        req.send().await.expect("seller request")
    }

    pub async fn risk(&self, body: &Value) -> Response {
        self.client
            .post(format!("{}/risk-analysis/validate", self.url))
            .json(body)
            .send()
            .await
            .expect("risk request")
    }

    pub async fn pay(&self, key: Option<&str>, body: &Value) -> Response {
        let mut req = self.client.post(format!("{}/gateway/pay", self.url));
        if let Some(key) = key {
            req = req.header("Idempotency-Key", key);
        }
        req.json(body).send().await.expect("pay request")
    }

    /// `GET /gateway/payments/{key}`, the key percent-encoded as one path segment.
    pub async fn lookup(&self, key: &str) -> Response {
        let url = self.payment_url(key, &[]);
        self.client.get(url).send().await.expect("lookup request")
    }

    /// `POST /gateway/payments/{key}/void`.
    pub async fn void(&self, key: &str) -> Response {
        let url = self.payment_url(key, &["void"]);
        self.client.post(url).send().await.expect("void request")
    }

    fn payment_url(&self, key: &str, tail: &[&str]) -> reqwest::Url {
        let mut url = reqwest::Url::parse(&self.url).expect("base URL");
        url.path_segments_mut()
            .expect("base URL has a path")
            .extend(["gateway", "payments", key])
            .extend(tail);
        url
    }

    pub async fn put_config(&self, body: &Value) -> Response {
        self.client
            .put(format!("{}/admin/config", self.url))
            .json(body)
            .send()
            .await
            .expect("config request")
    }

    pub async fn get(&self, path: &str) -> Response {
        let resp = self.client.get(format!("{}{path}", self.url)).send();
        resp.await.expect("admin request")
    }

    pub async fn ledger(&self) -> Ledger {
        self.get("/admin/ledger")
            .await
            .json()
            .await
            .expect("ledger JSON")
    }

    pub async fn stats(&self) -> Stats {
        self.get("/admin/stats")
            .await
            .json()
            .await
            .expect("stats JSON")
    }
}

pub fn risk_body(amount: i64, tax_id: &str) -> Value {
    json!({"seller_id": "shop", "reference_id": "ref-1", "amount": amount, "tax_id": tax_id})
}

pub fn pay_body(amount: i64, cvv: &str) -> Value {
    json!({
        "amount": amount,
        "installments": 1,
        "payment_method": {
            "type": "CREDIT_CARD",
            "card": {
                "number": "4111111111111111",
                "holder": "Ada Lovelace",
                "cvv": cvv,
                "expiration_date": "12/30"
            }
        }
    })
}

/// Polls the ledger until `done` holds, failing after `within`: for effects that land after the
/// answer (or after the client has gone), without sleeping a guessed amount.
pub async fn ledger_eventually(
    app: &TestMock,
    within: Duration,
    done: impl Fn(&Ledger) -> bool,
) -> Ledger {
    let deadline = Instant::now() + within;
    loop {
        let ledger = app.ledger().await;
        if done(&ledger) {
            return ledger;
        }
        assert!(
            Instant::now() < deadline,
            "ledger never got there: {ledger:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Asserts the status and returns the JSON body.
pub async fn expect_json(resp: Response, status: StatusCode) -> Value {
    assert_eq!(resp.status(), status);
    resp.json().await.expect("JSON body")
}
