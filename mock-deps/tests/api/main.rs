//! Integration tests: the real server on port 0, driven over real HTTP.

mod admin;
mod faults;
mod helpers;
mod payment;
mod reconcile;
mod risk;
mod seller;
