#pragma once
/// The umbrella header: everything a program needs to use ember.
#include "ember/autograd.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/print.h"
#include "ember/scalar.h"
#include "ember/tensor.h"
#include "ember/tensor_options.h"
#include "ember/version.h"
