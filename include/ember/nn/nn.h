#pragma once
/// Everything of ember::nn: Module, the layers, the losses, functional and init.
#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/loss.h"
#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/packed_sequence.h"
#include "ember/nn/parallel.h"
#include "ember/nn/pooling.h"
#include "ember/nn/rnn.h"
#include "ember/nn/transformer.h"
