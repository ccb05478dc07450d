# The InstEval subset under tests/data/insteval/ and its ordinal mixed-model reference (R's ordinal
# package, clmm: cumulative logit, Laplace approximation). Run from the repository root:
#   Rscript tests/data/ml/clmm_reference.R
# Debian packages: r-base-core r-cran-lme4 r-cran-ordinal.
suppressMessages({library(lme4); library(ordinal)})
data(InstEval)  # lme4: 73,421 course evaluations, students (s) rating lecturers (d) 1-5
out <- "tests/data/insteval"
dir.create(out, showWarnings = FALSE)

# The 60 lecturers with the most ratings; the students who rated at least 12 of them.
top <- names(sort(table(InstEval$d), decreasing = TRUE))[1:60]
sub <- droplevels(InstEval[InstEval$d %in% top, ])
per_student <- table(sub$s)
sub <- droplevels(sub[sub$s %in% names(per_student[per_student >= 12]), ])
ratings <- data.frame(response = paste0("d", sub$d), rater = paste0("s", sub$s), score = as.integer(as.character(sub$y)))
write.csv(ratings, file.path(out, "insteval_ratings.csv"), row.names = FALSE)

# Students as raters (random intercepts: severity = minus the conditional mode), lecturers as the
# rated responses (random intercepts: location), flexible thresholds.
seconds <- system.time(fit <- clmm(factor(score, ordered = TRUE) ~ 1 + (1 | rater) + (1 | response),
                                   data = ratings, link = "logit"))[["elapsed"]]
re <- ranef(fit); cv <- condVar(fit)
write.csv(data.frame(rater = rownames(re$rater), severity = -re$rater[, 1], sd = sqrt(cv$rater[, 1])),
          file.path(out, "clmm_raters.csv"), row.names = FALSE)
write.csv(data.frame(response = rownames(re$response), location = re$response[, 1], sd = sqrt(cv$response[, 1])),
          file.path(out, "clmm_responses.csv"), row.names = FALSE)
write.csv(data.frame(term = c(names(fit$alpha), "sd_rater", "sd_response", "loglik", "seconds"),
                     value = c(fit$alpha, sqrt(unlist(VarCorr(fit))[c("rater", "response")]), fit$logLik, seconds)),
          file.path(out, "clmm_summary.csv"), row.names = FALSE)
