// The mean magnitude in a region (time_curve.hpp).
#include "time_curve.hpp"

#include "roi_stats.hpp"

namespace larmor::model {

double roiMean(const CArray& image, PlaneRoi roi) { return roiStatistics(image, roi, {1, 1, 1}).mean; }

}  // namespace larmor::model
