//! The cost model: what a database's object-store requests and stored bytes cost per month at
//! a measured rate, under a [`PriceTable`] (defaults: AWS S3 Standard list prices, us-east-1,
//! 2026: $0.005 per 1,000 PUT/COPY/POST/LIST, $0.0004 per 1,000 GET/HEAD, DELETE free,
//! $0.023 per GB-month stored). Pure functions over counts; depends on `stats::requests` only.
//!
//! A month is 30 days. Data transfer is not priced: in the store's own region it is free.
//!
//! A [`RequestBudget`] bounds the requests by these prices or by count; the capacity tier
//! enforces it (`storage/object/budget.rs`) and reports [`BudgetStats`].

use std::fmt;
use std::str::FromStr;

use super::requests::{PriceClass, RequestCounts};

/// Seconds in the month the model prices (30 days).
pub const SECONDS_PER_MONTH: f64 = 30.0 * 24.0 * 3600.0;

/// Prices of an object store, in US dollars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceTable {
    /// Per 1,000 PUT, COPY, POST or LIST requests (multipart create, parts and completion are
    /// each one).
    pub write_per_1k: f64,
    /// Per 1,000 GET or HEAD requests (ranged GETs included).
    pub read_per_1k: f64,
    /// Per 1,000 DELETE requests.
    pub delete_per_1k: f64,
    /// Per GB (10^9 bytes) stored for a month.
    pub storage_per_gb_month: f64,
}

impl Default for PriceTable {
    /// AWS S3 Standard, us-east-1.
    fn default() -> Self {
        PriceTable {
            write_per_1k: 0.005,
            read_per_1k: 0.0004,
            delete_per_1k: 0.0,
            storage_per_gb_month: 0.023,
        }
    }
}

impl PriceTable {
    /// Dollars for `requests`.
    pub fn requests_usd(&self, requests: &RequestCounts) -> f64 {
        (requests.of_class(PriceClass::Write) as f64 * self.write_per_1k
            + requests.of_class(PriceClass::Read) as f64 * self.read_per_1k
            + requests.of_class(PriceClass::Delete) as f64 * self.delete_per_1k)
            / 1000.0
    }

    /// The monthly cost of making `requests` every `seconds` (the rate measured) and holding
    /// `stored_bytes` on the store.
    pub fn monthly(&self, requests: &RequestCounts, seconds: f64, stored_bytes: u64) -> Cost {
        let requests_usd_per_month = if seconds > 0.0 {
            self.requests_usd(requests) * SECONDS_PER_MONTH / seconds
        } else {
            0.0
        };
        let storage_usd_per_month = stored_bytes as f64 / 1e9 * self.storage_per_gb_month;
        Cost {
            requests_usd_per_month,
            storage_usd_per_month,
            usd_per_month: requests_usd_per_month + storage_usd_per_month,
        }
    }
}

impl fmt::Display for PriceTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "put={},get={},delete={},storage={}",
            self.write_per_1k, self.read_per_1k, self.delete_per_1k, self.storage_per_gb_month
        )
    }
}

/// Parses `put=0.005,get=0.0004,delete=0,storage=0.023` (dollars per 1,000 requests of the
/// class, and per GB-month): keys may be left out (they keep S3 Standard's price) and `list`
/// and `head` are accepted as `put` and `get`, whose classes they are priced in.
impl FromStr for PriceTable {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PriceTable::default().with(s)
    }
}

impl PriceTable {
    /// This table with the prices `spec` names replaced (the syntax of `FromStr`).
    pub fn with(mut self, spec: &str) -> Result<Self, String> {
        let p = &mut self;
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("price `{part}`: expected key=dollars"))?;
            let v: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("price `{part}`: not a non-negative number"))?;
            match k.trim() {
                "put" | "list" | "write" => p.write_per_1k = v,
                "get" | "head" | "read" => p.read_per_1k = v,
                "delete" => p.delete_per_1k = v,
                "storage" => p.storage_per_gb_month = v,
                other => {
                    return Err(format!(
                        "price `{other}`: expected put, get, delete or storage"
                    ))
                }
            }
        }
        Ok(self)
    }
}

/// A monthly cost estimate (see [`PriceTable::monthly`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Requests at the measured rate, for a month.
    pub requests_usd_per_month: f64,
    /// The bytes held, for a month.
    pub storage_usd_per_month: f64,
    /// The sum.
    pub usd_per_month: f64,
}

/// A request budget: requests per second and/or dollars per month (under `prices`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestBudget {
    /// Requests per second, every kind alike.
    pub requests_per_sec: Option<f64>,
    /// Dollars per month for requests, each priced by its class in `prices`.
    pub usd_per_month: Option<f64>,
    /// Prices of the dollar figure (S3 Standard by default).
    pub prices: PriceTable,
}

impl fmt::Display for RequestBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(r) = self.requests_per_sec {
            parts.push(format!("{r}/s"));
        }
        if let Some(d) = self.usd_per_month {
            parts.push(format!("${d}/month"));
        }
        write!(f, "{}", parts.join(","))
    }
}

/// Parses `50/s`, `$20/month` or both, comma-separated (`50/s,$20/month`).
impl FromStr for RequestBudget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut b = RequestBudget {
            requests_per_sec: None,
            usd_per_month: None,
            prices: PriceTable::default(),
        };
        let positive = |v: &str, part: &str| -> Result<f64, String> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| format!("request budget `{part}`: not a positive number"))
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(v) = part.strip_suffix("/s") {
                b.requests_per_sec = Some(positive(v, part)?);
            } else if let Some(v) = part.strip_suffix("/month") {
                b.usd_per_month = Some(positive(v.trim().trim_start_matches('$'), part)?);
            } else {
                return Err(format!(
                    "request budget `{part}`: expected requests per second (`50/s`) or dollars per month (`$20/month`)"
                ));
            }
        }
        if b.requests_per_sec.is_none() && b.usd_per_month.is_none() {
            return Err("request budget: empty".into());
        }
        Ok(b)
    }
}

/// How often background work waited for the budget, and for how long in all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetStats {
    /// The budget in force.
    pub budget: Option<RequestBudget>,
    /// Background requests that waited.
    pub waits: u64,
    /// Seconds they waited in all.
    pub wait_secs: f64,
}

#[cfg(test)]
mod tests {
    use super::super::requests::{RequestCounters, RequestKind};
    use super::*;

    fn counts(list: &[(RequestKind, u64)]) -> RequestCounts {
        let c = RequestCounters::default();
        for &(k, n) in list {
            c.add(k, n);
        }
        c.snapshot()
    }

    #[test]
    fn monthly_cost_from_a_measured_rate() {
        use RequestKind::*;
        let s3 = PriceTable::default();
        // (requests over the window, window seconds, bytes held, $/month requests, storage)
        type Case<'a> = (&'a [(RequestKind, u64)], f64, u64, f64, f64);
        let cases: &[Case] = &[
            (&[], 60.0, 0, 0.0, 0.0),
            // 1 PUT/s: 2.592M PUTs a month at $0.005 per 1,000.
            (&[(Put, 60)], 60.0, 0, 12.96, 0.0),
            // 1 GET/s and 1 ranged GET/s: 5.184M at $0.0004 per 1,000.
            (&[(Get, 60), (GetRange, 60)], 60.0, 0, 2.0736, 0.0),
            // LIST and multipart are write-class; deletes are free; 100 GB held.
            (
                &[(List, 1), (MultipartPart, 1), (Delete, 1000)],
                SECONDS_PER_MONTH,
                100_000_000_000,
                0.00001,
                2.3,
            ),
            // No time measured: no request rate, storage still priced.
            (&[(Put, 5)], 0.0, 1_000_000_000, 0.0, 0.023),
        ];
        for (i, &(reqs, secs, bytes, req_usd, storage_usd)) in cases.iter().enumerate() {
            let c = s3.monthly(&counts(reqs), secs, bytes);
            assert!(
                (c.requests_usd_per_month - req_usd).abs() < 1e-9,
                "case {i}: {c:?}"
            );
            assert!(
                (c.storage_usd_per_month - storage_usd).abs() < 1e-9,
                "case {i}: {c:?}"
            );
            assert!(
                (c.usd_per_month - req_usd - storage_usd).abs() < 1e-9,
                "case {i}"
            );
        }
    }

    #[test]
    fn budgets_parse_and_refuse_bad_input() {
        let b: RequestBudget = "50/s".parse().unwrap();
        assert_eq!((b.requests_per_sec, b.usd_per_month), (Some(50.0), None));
        let b: RequestBudget = "$20/month, 5.5/s".parse().unwrap();
        assert_eq!(
            (b.requests_per_sec, b.usd_per_month),
            (Some(5.5), Some(20.0))
        );
        assert_eq!(b.to_string().parse::<RequestBudget>().unwrap(), b);
        for bad in ["", "50", "0/s", "-1/s", "$x/month", "50/min"] {
            assert!(bad.parse::<RequestBudget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn price_tables_parse_and_refuse_bad_input() {
        let p: PriceTable = "put=0.0045, get=0.00036,storage=0.02".parse().unwrap();
        assert_eq!(
            p,
            PriceTable {
                write_per_1k: 0.0045,
                read_per_1k: 0.00036,
                delete_per_1k: 0.0,
                storage_per_gb_month: 0.02
            }
        );
        assert_eq!("".parse::<PriceTable>().unwrap(), PriceTable::default());
        let round: PriceTable = p.to_string().parse().unwrap();
        assert_eq!(round, p);
        for bad in ["put", "put=x", "put=-1", "egress=0.09", "get=inf"] {
            assert!(bad.parse::<PriceTable>().is_err(), "{bad}");
        }
    }
}
