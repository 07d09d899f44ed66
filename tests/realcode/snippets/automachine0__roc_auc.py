# source: https://github.com/AutoMachine0/Auto-GNAS/blob/aae4895ee4264e44e069ab6bbc28745f8d617c6d/autognas/model/evaluator_function/roc_auc_score.py
# reduced excerpt: imports and the lines binding each receiver are kept; `# expect:` labels are ours
# ruff: noqa
from sklearn.metrics import roc_auc_score


class Evaluator:
    def function(self, y_predict, y_ture):
        y_predict = y_predict.to("cpu").detach().numpy()  # expect: leave
        y_ture = y_ture.to("cpu").detach().numpy()  # expect: leave
        return roc_auc_score(y_ture, y_predict)
