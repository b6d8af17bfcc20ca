// The fidelity statistics (eval/FidelityReport.h) against llama.cpp's formulas written out by
// hand, and the per-row comparison of two logit matrices (eval/FidelityComparison.h) against
// the textbook definitions computed with ATen in float64.
#include "TestMain.h"
#include "eval/FidelityComparison.h"
#include "eval/FidelityReport.h"

#include <ATen/ATen.h>
#include <QtTest>

#include <cmath>

class TestFidelity : public QObject {
    Q_OBJECT

private:
    // n samples with KL = i / n, Δp alternating ±i / n, nll values 1 + i / n and 2 + i / n,
    // every third position a different top token.
    static qs::FidelitySamples ramp(int n) {
        qs::FidelitySamples s;
        for (int i = 0; i < n; ++i) {
            s.kl.push_back(double(i) / n);
            s.deltaP.push_back((i % 2 ? -1.0 : 1.0) * double(i) / n);
            s.nllBase.push_back(1.0 + double(i) / n);
            s.nllQuant.push_back(2.0 + double(i) / n);
            s.sameTop.push_back(i % 3 == 0 ? 0 : 1);
        }
        return s;
    }

private Q_SLOTS:
    void meansErrorsAndQuantilesFollowLlamaCpp() {
        const int n = 100;
        const qs::FidelitySamples s = ramp(n);
        const qs::FidelityReport r = qs::summarizeFidelity(s, 200);
        QCOMPARE(r.positions, int64_t(n));
        // Mean of i/n for i < n is (n - 1) / (2n); its error sqrt((E[x^2] - E[x]^2) / (n - 1)).
        double sum = 0, sum2 = 0;
        for (double v : s.kl)
            sum += v, sum2 += v * v;
        const double mean = sum / n;
        QVERIFY(std::abs(r.klMean.value - 0.495) < 1e-15);
        QVERIFY(std::abs(r.klMean.error - std::sqrt((sum2 / n - mean * mean) / (n - 1))) < 1e-15);
        // Quantiles interpolate at level x (n - 1): 0.99 -> 98.01 / n, the median 49.5 / n.
        auto quantile = [](const std::vector<qs::Quantile>& qs, double level) {
            for (const qs::Quantile& q : qs)
                if (q.level == level)
                    return q.value;
            return std::nan("");
        };
        QVERIFY(std::abs(quantile(r.klQuantiles, 0.99) - 0.9801) < 1e-12);
        QVERIFY(std::abs(quantile(r.klQuantiles, 0.5) - 0.495) < 1e-12);
        QVERIFY(quantile(r.klQuantiles, 1.0) == 0.99);
        QVERIFY(quantile(r.klQuantiles, 0.0) == 0.0);
        QCOMPARE(r.klQuantiles.size(), size_t(11));
        QCOMPARE(r.deltaPQuantiles.size(), size_t(13));
        // Every NLL of Q is the base's plus 1: ln(PPL(Q)/PPL(base)) = 1 with no spread, and the
        // two fully correlated.
        QVERIFY(std::abs(r.lnPerplexityRatio.value - 1.0) < 1e-12);
        QVERIFY(r.lnPerplexityRatio.error < 1e-6);
        QVERIFY(std::abs(r.lnPerplexityCorrelation - 1.0) < 1e-9);
        // 34 of 100 positions (i = 0, 3, ..., 99) differ at the top.
        const double same = 1.0 - 34.0 / 100.0;
        QVERIFY(std::abs(r.sameTop.value - same) < 1e-15);
        QVERIFY(std::abs(r.sameTop.error - std::sqrt(same * (1 - same) / (n - 1))) < 1e-15);
        // RMS Δp: sqrt(E[(i/n)^2]).
        QVERIFY(std::abs(r.deltaPRms.value - std::sqrt(sum2 / n)) < 1e-15);
        // The bootstrap interval holds the mean and lies within the samples' range.
        QVERIFY(r.klMeanInterval.first < mean && mean < r.klMeanInterval.second);
        QVERIFY(r.sameTopInterval.first < same && same < r.sameTopInterval.second);
        // Fixed seed: the same samples give the same interval.
        const qs::FidelityReport again = qs::summarizeFidelity(s, 200);
        QVERIFY(again.klMeanInterval == r.klMeanInterval);
    }

    void fewSamplesHaveNoError() {
        const qs::FidelityReport r = qs::summarizeFidelity(ramp(10), 0);
        QVERIFY(r.klMean.error == 0.0); // llama.cpp states no error for ten values or fewer
        QCOMPARE(r.bootstrapResamples, 0);
    }

    void emptySamplesAreRefused() {
        QVERIFY_THROWS_EXCEPTION(std::exception, qs::summarizeFidelity({}));
    }

    // KL(p || q) = sum p (log p - log q), Δp = q_t - p_t, NLLs and argmax equality, each row
    // against ATen's float64 log_softmax. The kernel reads fp32 logits exactly (converted to
    // double), so the only difference is its float exp (about 1 ulp, 6e-8 relative) weighting
    // the terms: |KL error| <= 6e-8 x (E_p|d| + |log sum_p| + |log sum_q|) with |d| below 40 on
    // these logits; 1e-7 absolute + 1e-6 relative covers that.
    void rowsMatchTheDefinitions() {
        at::manual_seed(3);
        const int64_t rows = 37, V = 1003; // V not a multiple of the vector width
        const at::Tensor base = at::randn({rows, V}) * 4;
        const at::Tensor quant = base + at::randn({rows, V}) * 0.3;
        const at::Tensor targets = at::randint(0, V, {rows}, at::kLong);
        qs::FidelitySamples s;
        qs::compareLogitRows(base, quant, targets, s);
        QCOMPARE(s.size(), size_t(rows));
        const at::Tensor lp = at::log_softmax(base.to(at::kDouble), -1);
        const at::Tensor lq = at::log_softmax(quant.to(at::kDouble), -1);
        const at::Tensor kl = (lp.exp() * (lp - lq)).sum(-1);
        const at::Tensor nb = -lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
        const at::Tensor nq = -lq.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
        for (int64_t r = 0; r < rows; ++r) {
            const double k = kl[r].item<double>();
            QVERIFY2(
                std::abs(s.kl[size_t(r)] - k) <= 1e-7 + 1e-6 * k,
                qPrintable(QString("row %1: %2 against %3").arg(r).arg(s.kl[size_t(r)]).arg(k)));
            QVERIFY(std::abs(s.nllBase[size_t(r)] - nb[r].item<double>()) < 1e-6);
            QVERIFY(std::abs(s.nllQuant[size_t(r)] - nq[r].item<double>()) < 1e-6);
            const double dp = std::exp(-nq[r].item<double>()) - std::exp(-nb[r].item<double>());
            QVERIFY(std::abs(s.deltaP[size_t(r)] - dp) < 1e-7);
            const bool same = base[r].argmax().item<int64_t>() == quant[r].argmax().item<int64_t>();
            QCOMPARE(bool(s.sameTop[size_t(r)]), same);
        }
    }

    // Equal logits: every KL and Δp exactly 0, whatever the rounding of the exponentials.
    void equalRowsGiveExactlyZero() {
        at::manual_seed(4);
        const at::Tensor x = at::randn({16, 700}) * 6;
        qs::FidelitySamples s;
        qs::compareLogitRows(x, x.clone(), at::randint(0, 700, {16}, at::kLong), s);
        for (size_t r = 0; r < s.size(); ++r) {
            QVERIFY(s.kl[r] == 0.0);
            QVERIFY(s.deltaP[r] == 0.0);
            QVERIFY(s.sameTop[r] == 1);
        }
    }

    void targetsOutsideTheVocabularyAreRefused() {
        const at::Tensor x = at::zeros({2, 5});
        qs::FidelitySamples s;
        QVERIFY_THROWS_EXCEPTION(
            std::exception, qs::compareLogitRows(x, x, at::tensor({int64_t(1), int64_t(5)}), s));
    }
};

QS_TEST_GUILESS_MAIN(TestFidelity)
#include "tst_fidelity.moc"
