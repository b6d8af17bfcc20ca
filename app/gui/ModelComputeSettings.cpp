#include "ModelComputeSettings.h"

#include "RecentModelList.h"

#include <QSettings>
#include <QVariantMap>

namespace qs {

namespace {
// One map under one key rather than a key per model: QSettings reads '/' in a key as nested
// groups, and a model path is full of them.
const char* const ModelComputeKey = "models/compute";
const char* const DeviceField = "device";
const char* const DtypeField = "dtype";
} // namespace

ModelCompute ModelComputeSettings::load(const QString& model) {
    const QVariantMap all = QSettings().value(QLatin1String(ModelComputeKey)).toMap();
    const QVariantMap entry = all.value(RecentModelList::normalized(model)).toMap();
    return {entry.value(QLatin1String(DeviceField)).toString(),
            entry.value(QLatin1String(DtypeField)).toString()};
}

void ModelComputeSettings::save(const QString& model, const ModelCompute& compute) {
    QSettings settings;
    QVariantMap all = settings.value(QLatin1String(ModelComputeKey)).toMap();
    all.insert(RecentModelList::normalized(model),
               QVariantMap{{QLatin1String(DeviceField), compute.device},
                           {QLatin1String(DtypeField), compute.dtype}});
    settings.setValue(QLatin1String(ModelComputeKey), all);
}

} // namespace qs
