//! Floodsub: every message to every peer in its topic, no control messages.

use smallvec::SmallVec;

use super::{Ctx, Route, Router};

impl Router {
    /// Every link whose peer is in `topic`.
    pub(super) fn floodsub_recipients(&self, cx: &Ctx, topic: u16) -> (SmallVec<[u32; 32]>, Route) {
        let recipients = self.topic_links(cx.links, cx.node, topic).collect();
        (recipients, Route::Flood)
    }
}
