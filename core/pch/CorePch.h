// Precompiled header for core: the expensive, stable headers only. Every Torch-including
// translation unit costs 10-20 s on two cores without it (docs/pitfalls.md).
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <QtCore/QString>
#include <string>
#include <vector>
#include <memory>
#include <functional>
