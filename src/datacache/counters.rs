//! The data cache's counters: its own, and the few of foyer's metrics it keeps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use foyer::{Event, EventListener};

use super::block::Block;

/// A metrics registry for foyer that keeps the counters this library reports (disk-tier writes
/// skipped because the write queue was full, disk-tier errors); everything else is dropped.
#[derive(Debug, Default)]
pub(super) struct FoyerCounters {
    pub(super) write_drops: Arc<AtomicU64>,
    pub(super) disk_errors: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Sink(Option<Arc<AtomicU64>>);

impl mixtrics::metrics::CounterOps for Sink {
    fn increase(&self, val: u64) {
        if let Some(c) = &self.0 {
            c.fetch_add(val, Ordering::Relaxed);
        }
    }
}

impl mixtrics::metrics::GaugeOps for Sink {
    fn increase(&self, _: u64) {}
    fn decrease(&self, _: u64) {}
    fn absolute(&self, _: u64) {}
}

impl mixtrics::metrics::HistogramOps for Sink {
    fn record(&self, _: f64) {}
}

#[derive(Debug)]
struct CounterVec {
    name: String,
    counters: Arc<FoyerCounters>,
}

impl mixtrics::metrics::CounterVecOps for CounterVec {
    fn counter(&self, labels: &[std::borrow::Cow<'static, str>]) -> mixtrics::metrics::BoxedCounter {
        let op = labels.last().map(|l| l.as_ref()).unwrap_or("");
        let target = match (self.name.as_str(), op) {
            ("foyer_storage_inner_op_total", "buffer_overflow" | "channel_overflow") => {
                Some(self.counters.write_drops.clone())
            }
            ("foyer_storage_op_total", "error") => Some(self.counters.disk_errors.clone()),
            _ => None,
        };
        Box::new(Sink(target))
    }
}

#[derive(Debug)]
struct NoVec;

impl mixtrics::metrics::GaugeVecOps for NoVec {
    fn gauge(&self, _: &[std::borrow::Cow<'static, str>]) -> mixtrics::metrics::BoxedGauge {
        Box::new(Sink(None))
    }
}

impl mixtrics::metrics::HistogramVecOps for NoVec {
    fn histogram(&self, _: &[std::borrow::Cow<'static, str>]) -> mixtrics::metrics::BoxedHistogram {
        Box::new(Sink(None))
    }
}

#[derive(Debug)]
pub(super) struct Registry(pub(super) Arc<FoyerCounters>);

impl mixtrics::metrics::RegistryOps for Registry {
    fn register_counter_vec(
        &self,
        name: std::borrow::Cow<'static, str>,
        _: std::borrow::Cow<'static, str>,
        _: &'static [&'static str],
    ) -> mixtrics::metrics::BoxedCounterVec {
        Box::new(CounterVec { name: name.into_owned(), counters: self.0.clone() })
    }
    fn register_gauge_vec(
        &self,
        _: std::borrow::Cow<'static, str>,
        _: std::borrow::Cow<'static, str>,
        _: &'static [&'static str],
    ) -> mixtrics::metrics::BoxedGaugeVec {
        Box::new(NoVec)
    }
    fn register_histogram_vec(
        &self,
        _: std::borrow::Cow<'static, str>,
        _: std::borrow::Cow<'static, str>,
        _: &'static [&'static str],
    ) -> mixtrics::metrics::BoxedHistogramVec {
        Box::new(NoVec)
    }
    fn register_histogram_vec_with_buckets(
        &self,
        _: std::borrow::Cow<'static, str>,
        _: std::borrow::Cow<'static, str>,
        _: &'static [&'static str],
        _: Vec<f64>,
    ) -> mixtrics::metrics::BoxedHistogramVec {
        Box::new(NoVec)
    }
}

/// Session-wide counters of the data cache.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) hits: AtomicU64,
    pub(super) misses: AtomicU64,
    pub(super) hit_bytes: AtomicU64,
    pub(super) storage_requests: AtomicU64,
    pub(super) storage_bytes: AtomicU64,
    pub(super) evictions: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) foyer: Arc<FoyerCounters>,
}

pub(super) struct EvictionCounter(pub(super) Arc<Counters>);

impl EventListener for EvictionCounter {
    type Key = String;
    type Value = Block;
    fn on_leave(&self, reason: Event, _key: &String, _value: &Block) {
        if matches!(reason, Event::Evict) {
            self.0.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }
}
